"""NVML samples (power, clocks, temperature, throttling) taken in a thread while timing runs."""

from __future__ import annotations

import statistics
import threading

from profiler_agent import nvml

SAMPLE_INTERVAL_S = 0.01
ENERGY_BURST_S = 1.0  # the energy counter ticks coarsely; a second of calls keeps its error small


def empty_telemetry() -> dict:
    return {
        "power_w": {"mean": None, "max": None},
        "energy_j_per_call": None,
        "sm_clock_mhz": None,
        "mem_clock_mhz": None,
        "temperature_c": None,
        "throttle_reasons": [],
        "peak_memory_bytes": None,
    }


class NvmlSampler:
    """Use as a context manager around the timed region; `telemetry()` summarizes what it saw."""

    def __init__(self, handle):
        self._handle = handle
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._power_w: list[float] = []
        self._sm_mhz: list[int] = []
        self._mem_mhz: list[int] = []
        self._temp_c: list[int] = []
        self._reasons: set[str] = set()

    def __enter__(self):
        if self._handle is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return False

    def _sample(self) -> None:
        nv = nvml.load()
        watts = nvml.power_w(self._handle)
        if watts is not None:
            self._power_w.append(watts)
        for values, clock in ((self._sm_mhz, nv.NVML_CLOCK_SM), (self._mem_mhz, nv.NVML_CLOCK_MEM)):
            mhz = nvml.call("nvmlDeviceGetClockInfo", self._handle, clock)
            if mhz is not None:
                values.append(mhz)
        temp = nvml.call("nvmlDeviceGetTemperature", self._handle, nv.NVML_TEMPERATURE_GPU)
        if temp is not None:
            self._temp_c.append(temp)
        self._reasons.update(nvml.throttle_reasons(self._handle) or [])

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(SAMPLE_INTERVAL_S):
                self._sample()  # one last sample at the end of the region
                return

    @property
    def samples(self) -> int:
        return len(self._power_w)

    def telemetry(self) -> dict:
        out = empty_telemetry()
        if self._power_w:
            out["power_w"] = {"mean": statistics.fmean(self._power_w), "max": max(self._power_w)}
        if self._sm_mhz:
            out["sm_clock_mhz"] = statistics.fmean(self._sm_mhz)
        if self._mem_mhz:
            out["mem_clock_mhz"] = statistics.fmean(self._mem_mhz)
        if self._temp_c:
            out["temperature_c"] = max(self._temp_c)
        out["throttle_reasons"] = sorted(self._reasons)
        return out


def energy_per_call_j(call, synchronize, now_s, handle, burst_s: float = ENERGY_BURST_S) -> float | None:
    """Joules per call from NVML's total-energy counter (mJ) across a burst of back-to-back calls."""
    before = nvml.call("nvmlDeviceGetTotalEnergyConsumption", handle) if handle is not None else None
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
    after = nvml.call("nvmlDeviceGetTotalEnergyConsumption", handle)
    if after is None or after <= before:
        return None
    return (after - before) / 1000.0 / calls
