"""Timing two models the same way, interleaved, on CPU (perf_counter_ns) or CUDA (events).

The clock is bound when this module is imported, before any submission code loads, so a
submission that patches `time.perf_counter_ns` later cannot change what the harness reads.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

_perf_counter_ns = time.perf_counter_ns

WARMUP_CALLS = 3
MIN_RUNS = 10
MAX_RUNS = 100
BUDGET_S = 3.0  # per model pair, after warm-up; stops early once MIN_RUNS are in
L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2


def now_s() -> float:
    return _perf_counter_ns() / 1e9


def summarize(times_ms: list[float]) -> dict:
    return {
        "median_ms": statistics.median(times_ms),
        "mean_ms": statistics.fmean(times_ms),
        "min_ms": min(times_ms),
        "std_ms": statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0,
        "runs": len(times_ms),
    }


class CpuTimer:
    def __call__(self, call: Callable[[], object]) -> float:
        start = _perf_counter_ns()
        call()
        return (_perf_counter_ns() - start) / 1e6


class CudaTimer:
    """Events on the current stream; L2 flushed before each call so no call starts warm."""

    def __init__(self, device):
        import torch

        self._torch = torch
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)
        self._flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device)

    def __call__(self, call: Callable[[], object]) -> float:
        self._flush.zero_()
        self._torch.cuda.synchronize()
        self._start.record()
        call()
        self._end.record()
        # a device-wide synchronize, so the end event also waits out work the call left behind
        self._torch.cuda.synchronize()
        return self._start.elapsed_time(self._end)


def time_interleaved(
    calls: dict[str, Callable[[], object]],
    timer: Callable[[Callable[[], object]], float],
    *,
    warmup: int = WARMUP_CALLS,
    min_runs: int = MIN_RUNS,
    max_runs: int = MAX_RUNS,
    budget_s: float = BUDGET_S,
) -> dict[str, list[float]]:
    """Time every call once per round, alternating, so drift in clocks or load hits all alike."""
    for _ in range(warmup):
        for call in calls.values():
            timer(call)
    times: dict[str, list[float]] = {name: [] for name in calls}
    started = now_s()
    for rounds in range(1, max_runs + 1):
        for name, call in calls.items():
            times[name].append(timer(call))
        if rounds >= min_runs and now_s() - started > budget_s:
            break
    return times
