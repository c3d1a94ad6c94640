"""Device samples (power, clocks, temperature, throttling) taken in a thread while timing runs, a
power/clock trace of them, and energy per call from the device's energy counter."""

from __future__ import annotations

import bisect
import statistics
import threading
from typing import NamedTuple
import time

SAMPLE_INTERVAL_S = 0.01
MAX_TRACE_POINTS = 200  # the site's power/clock chart needs no more, and results stay small
# The energy counter moves in steps (100 ms on the H100: bench/energy_window.py); a fixed 1 s of calls
# still spread 0.6% over repeats, 0.5 s 23%. Read from a step to a step, 0.3 s is enough.
ENERGY_WINDOW_S = 0.3
ENERGY_TIMEOUT_S = 2.0  # a counter that does not move in this time gives no figure
ENERGY_BATCH_S = 0.002  # calls between two notes of the calls made
ENERGY_POLL_S = 0.001  # between two readings of the counter
# A step's instant is known only within its bracket: from the start of the watcher's reading before it
# to the end of the reading that saw it (a reading takes 2.4 ms on the H200; a watcher held off the CPU
# sees a step late, which made a figure 38% off on a loaded CI host). The calls made within the two
# brackets are the figure's doubt: the window grows until they are at most this share of its calls.
ENERGY_PRECISION = 0.025

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


class _PlacedStep(NamedTuple):
    at: float  # the middle of its bracket
    doubt: float  # half the calls made within its bracket
    calls: float  # the calls made by `at`
    mj: int  # the counter's value


def energy_per_call_j(call, synchronize, now_s, source, window_s: float = ENERGY_WINDOW_S,
                      timeout_s: float = ENERGY_TIMEOUT_S) -> float | None:
    """Joules per call from the device's total-energy counter (mJ), read between two of its updates
    at least `window_s` apart while back-to-back calls keep the device busy. The counter moves in
    steps (every 100 ms on the H100), so the energy between two updates is known exactly; the calls
    made between them are read off this thread's count at those instants. A thread of its own
    watches the counter: a reading takes long enough that polling it between calls would leave the
    device idle (bench/energy_window.py). The window is longer where the steps are placed less
    precisely (ENERGY_PRECISION). None when `source` (a backend's Gpu, or None) has no energy
    counter, or no two of its updates gave a precise enough figure in `timeout_s`."""
    if source is None or source.energy_mj() is None:
        return None
    synchronize()
    updates: list[tuple[float, float, int]] = []  # (the reading before the step began, the one seeing it ended, value)
    stop = threading.Event()

    def watch() -> None:
        previous_at, last = now_s(), source.energy_mj()
        while not stop.wait(ENERGY_POLL_S):  # a pause: the calls' thread needs the interpreter too
            reading_at = now_s()
            value = source.energy_mj()
            if value is None:
                return
            if value != last:
                updates.append((previous_at, now_s(), value))
                last = value
            previous_at = reading_at

    counts: list[tuple[float, int]] = [(now_s(), 0)]  # (when, calls done by then)

    placed: list[_PlacedStep] = []

    def figure() -> float | None:
        """Joules per call between the first two updates `window_s` apart whose brackets hold few enough
        calls, each placed at its bracket's middle. Only an update the count has passed is placed, and
        the pairs it ends are tried once: the count up to it no longer changes."""
        for before, after, value in list(updates)[len(placed):]:
            if after > counts[-1][0]:
                return None
            at = (before + after) / 2
            last = _PlacedStep(at, (_calls_at(counts, after) - _calls_at(counts, before)) / 2,
                               _calls_at(counts, at), value)
            for first in placed:
                between = last.calls - first.calls
                if last.at - first.at >= window_s and last.mj > first.mj and between > 0 \
                        and first.doubt + last.doubt <= ENERGY_PRECISION * between:
                    return (last.mj - first.mj) / 1000.0 / between
            placed.append(last)
        return None

    watcher = threading.Thread(target=watch, name="energy-counter", daemon=True)
    started, calls, batch = counts[0][0], 0, _batch_size(call, synchronize, now_s)
    watcher.start()
    joules = None
    try:
        while joules is None and now_s() - started < timeout_s:
            for _ in range(batch):
                call()
            synchronize()
            calls += batch
            counts.append((now_s(), calls))
            joules = figure()
    finally:
        stop.set()
        watcher.join()
    return joules


def _calls_at(counts: list[tuple[float, int]], when: float) -> float:
    """Calls done by `when`, interpolated between the count's readings around it (in time order)."""
    i = bisect.bisect_left(counts, when, key=lambda count: count[0])
    if i == len(counts):
        return float(counts[-1][1])
    if i == 0:
        return float(counts[0][1]) if when == counts[0][0] else 0.0
    (t0, c0), (t1, c1) = counts[i - 1], counts[i]
    return c0 + (c1 - c0) * ((when - t0) / (t1 - t0) if t1 > t0 else 1.0)


def _batch_size(call, synchronize, now_s, target_s: float = ENERGY_BATCH_S) -> int:
    """Calls per poll of the counter: enough to keep the device busy between polls, few enough that
    the batch that straddles an update is a small share of the window."""
    started = now_s()
    call()
    synchronize()
    one = max(now_s() - started, 1e-6)
    return max(1, min(1000, int(target_s / one)))
