"""Every GPU's utilization, memory, SM clock and power sampled by NVML in a thread, tagged with the
phase of the bench it runs beside (bench/fleet/two_gpus.py)."""
from __future__ import annotations

import statistics
import threading
import time

SAMPLE_S = 0.5


class NvmlSampler:
    """Every GPU's utilization, memory, SM clock and power every SAMPLE_S seconds, tagged with the phase."""

    def __init__(self):
        self.rows = []
        self.phase = "setup"
        self.gpus = []  # (index, uuid, name)
        self._stop = threading.Event()
        self._thread = None
        self.error = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.gpus = [(i, _text(pynvml.nvmlDeviceGetUUID(h)), _text(pynvml.nvmlDeviceGetName(h)))
                         for i, h in enumerate(self._handles)]
            self.driver = _text(pynvml.nvmlSystemGetDriverVersion())
        except Exception as exc:  # no NVIDIA driver (a CPU machine): no samples
            self.error, self._handles, self.driver = f"{type(exc).__name__}: {exc}", [], None

    def uuid_of(self, index):
        return next((uuid for i, uuid, _ in self.gpus if i == index), None)

    def start(self):
        if self._handles:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()

    def _loop(self):
        nvml = self._nvml
        while not self._stop.is_set():
            now = time.time()
            for index, handle in enumerate(self._handles):
                try:
                    util = nvml.nvmlDeviceGetUtilizationRates(handle)
                    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                    clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
                    power = nvml.nvmlDeviceGetPowerUsage(handle) / 1000
                except Exception as exc:  # one bad read: keep sampling
                    self.error = f"{type(exc).__name__}: {exc}"
                    continue
                self.rows.append({"t": round(now, 3), "phase": self.phase, "gpu": index, "util_gpu": util.gpu,
                                  "util_mem": util.memory, "mem_used_mib": memory.used // 2**20,
                                  "sm_mhz": clock, "power_w": round(power, 1)})
            self._stop.wait(SAMPLE_S)

    def close(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def summary(self, phase):
        per_gpu = {}
        for index, uuid, name in self.gpus:
            values = [r["util_gpu"] for r in self.rows if r["gpu"] == index and r["phase"] == phase]
            if values:
                per_gpu[index] = {"uuid": uuid, "samples": len(values), "busy_fraction": sum(v > 0 for v in values) / len(values),
                                  "mean_util": statistics.fmean(values), "p50_util": statistics.median(values),
                                  "max_util": max(values)}
        return per_gpu


def _text(value):
    return value.decode() if isinstance(value, bytes) else value
