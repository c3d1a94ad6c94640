"""Device samples (power, clocks, temperature, throttling) taken in a thread while timing runs, a
power/clock trace of them, and energy per call from the device's energy counter."""

from __future__ import annotations

import statistics
import threading
import time

SAMPLE_INTERVAL_S = 0.01
MAX_TRACE_POINTS = 200  # the site's power/clock chart needs no more, and results stay small
ENERGY_BURST_S = 1.0  # the energy counter ticks coarsely; a second of calls keeps its error small

_clock_s = time.perf_counter  # bound at import: submission code patching time cannot bend the trace


def empty_telemetry() -> dict:
    return {
        "power_w": {"mean": None, "max": None},
        "energy_j_per_call": None,
        "sm_clock_mhz": None,
        "mem_clock_mhz": None,
        "temperature_c": None,
        "throttle_reasons": [],
        "peak_memory_bytes": None,
        "trace": [],
    }


def downsample(points: list, limit: int = MAX_TRACE_POINTS) -> list:
    """At most `limit` points, evenly spaced over the list, first and last kept. Points are picked,
    never averaged, so every one is a reading the device gave."""
    if len(points) <= limit:
        return list(points)
    if limit <= 1:
        return points[:limit]
    last = len(points) - 1
    return [points[round(i * last / (limit - 1))] for i in range(limit)]


class TelemetrySampler:
    """Use as a context manager around the timed region; `telemetry()` summarizes what it saw.

    `source` is anything with `sample() -> devices.Sample` (a backend's Gpu), or None: then nothing
    is sampled and the telemetry stays empty. A source whose readings are costly (mx-smi) says how
    long to pause between them in `min_sample_interval_s`."""

    def __init__(self, source, interval_s: float = SAMPLE_INTERVAL_S, max_trace_points: int = MAX_TRACE_POINTS):
        self._source = source
        self._interval_s = max(interval_s, getattr(source, "min_sample_interval_s", 0.0))
        self._max_trace_points = max_trace_points
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry-sampler", daemon=True)
        self._started_s: float | None = None
        self._readings: list[tuple[float, object]] = []  # (seconds since start, Sample)

    def __enter__(self):
        self._started_s = _clock_s()
        if self._source is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return False

    def _sample(self) -> None:
        try:
            reading = self._source.sample()
        except Exception:
            return  # a failed reading is a missing point, never a failed judgement
        self._readings.append((_clock_s() - self._started_s, reading))

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self._interval_s):
                self._sample()  # one last sample at the end of the region
                return

    @property
    def samples(self) -> int:
        return len(self._readings)

    def trace(self) -> list[dict]:
        """Power and SM clock over the region: [{"t_s", "power_w", "sm_clock_mhz"}], t_s from the start
        of sampling, readings with neither value left out, at most `max_trace_points` points."""
        points = [
            {"t_s": round(t_s, 4), "power_w": reading.power_w, "sm_clock_mhz": reading.sm_clock_mhz}
            for t_s, reading in self._readings
            if reading.power_w is not None or reading.sm_clock_mhz is not None
        ]
        return downsample(points, self._max_trace_points)

    def telemetry(self) -> dict:
        out = empty_telemetry()
        readings = [reading for _, reading in self._readings]
        power = [r.power_w for r in readings if r.power_w is not None]
        sm_mhz = [r.sm_clock_mhz for r in readings if r.sm_clock_mhz is not None]
        mem_mhz = [r.mem_clock_mhz for r in readings if r.mem_clock_mhz is not None]
        temperature = [r.temperature_c for r in readings if r.temperature_c is not None]
        if power:
            out["power_w"] = {"mean": statistics.fmean(power), "max": max(power)}
        if sm_mhz:
            out["sm_clock_mhz"] = statistics.fmean(sm_mhz)
        if mem_mhz:
            out["mem_clock_mhz"] = statistics.fmean(mem_mhz)
        if temperature:
            out["temperature_c"] = max(temperature)
        out["throttle_reasons"] = sorted({reason for r in readings for reason in r.throttle_reasons})
        out["trace"] = self.trace()
        return out


def energy_per_call_j(call, synchronize, now_s, source, burst_s: float = ENERGY_BURST_S) -> float | None:
    """Joules per call from the device's total-energy counter (mJ) across a burst of back-to-back
    calls; None when `source` (a backend's Gpu, or None) has no energy counter."""
    before = source.energy_mj() if source is not None else None
    if before is None:
        return None
    synchronize()
    started, calls = now_s(), 0
    while True:
        call()
        calls += 1
        if calls % 10 == 0:
            synchronize()
            if now_s() - started >= burst_s:
                break
    after = source.energy_mj()
    if after is None or after <= before:
        return None
    return (after - before) / 1000.0 / calls
