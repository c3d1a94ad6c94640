"""Timing two models the same way, interleaved, on CPU (perf_counter_ns) or CUDA (events).

The clocks are bound when this module is imported, before any submission code loads, so a
submission that patches `time.perf_counter_ns` later cannot change what the harness reads. Each
timed call is also bracketed by a second clock (monotonic_ns): when the two disagree, something
patched a timer (`timer_tampered`).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable

_perf_counter_ns = time.perf_counter_ns
_monotonic_ns = time.monotonic_ns


@dataclass(frozen=True)
class TimingPlan:
    warmup: int = 3
    min_runs: int = 10
    max_runs: int = 100_000
    target_rse: float = 0.005  # stop once both medians' relative standard error is below this
    budget_s: float = 3.0  # per model pair, after warm-up; stops there even if the RSE is higher

    @classmethod
    def from_settings(cls, settings: dict | None) -> "TimingPlan":
        known = {k: v for k, v in (settings or {}).items() if k in cls.__dataclass_fields__ and v is not None}
        return cls(**known)


L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2
# Timed call vs the second clock: the timer may not claim more than the wall clock saw, nor less
# than half of it (plus launch and synchronize slack, which dominate calls of a few microseconds).
TAMPER_SLACK_MS = 0.05


def now_s() -> float:
    return _perf_counter_ns() / 1e9


def _both_clocks_s() -> tuple[float, float]:
    return _perf_counter_ns() / 1e9, _monotonic_ns() / 1e9


def relative_standard_error(times_ms: list[float]) -> float:
    if len(times_ms) < 2:
        return math.inf
    mean = statistics.fmean(times_ms)
    return statistics.stdev(times_ms) / math.sqrt(len(times_ms)) / mean if mean > 0 else math.inf


def summarize(times_ms: list[float]) -> dict:
    return {
        "median_ms": statistics.median(times_ms),
        "mean_ms": statistics.fmean(times_ms),
        "min_ms": min(times_ms),
        "std_ms": statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0,
        "runs": len(times_ms),
    }


class CpuTimer:
    wall_slack_ms = 0.0

    def __call__(self, call: Callable[[], object]) -> tuple[float, float]:
        wall_start = _monotonic_ns()
        start = _perf_counter_ns()
        call()
        end = _perf_counter_ns()
        return (end - start) / 1e6, (_monotonic_ns() - wall_start) / 1e6


class CudaTimer:
    """Events on the current stream; L2 flushed before each call so no call starts warm. The end
    event is followed by a device-wide synchronize, so work the call left on any stream counts.

    The flush is enqueued right before the start event and not waited for: while the GPU clears
    the cache (~0.1 ms), Python launches the call, so the events see the kernel and not the
    launch latency (a synchronize there added ~30 us to every call of a small kernel on an H100).
    """

    def __init__(self, device):
        import torch

        self._torch = torch
        self._event = torch.cuda.Event  # bound now: a later patch of torch.cuda.Event changes nothing
        self._start = self._event(enable_timing=True)
        self._end = self._event(enable_timing=True)
        # Flushing by reading leaves L2 full of clean lines: a flush that writes (zero_, as do_bench
        # does) leaves dirty ones, whose write-back then lands inside the next timed call (+16% on
        # a 45 us ReLU on an H100 against Nsight Compute).
        self._flush_buffer = torch.zeros(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
        self.wall_slack_ms = self._flush_ms()

    def _flush(self) -> None:
        self._flush_buffer.max()  # reads every line; the one-element result is all it writes

    def _flush_ms(self) -> float:
        """How long one flush runs: the most of it the wall clock may see after the start event."""
        times = []
        for _ in range(5):
            self._start.record()
            self._flush()
            self._end.record()
            self._torch.cuda.synchronize()
            times.append(self._start.elapsed_time(self._end))
        return statistics.median(times)

    def __call__(self, call: Callable[[], object]) -> tuple[float, float]:
        self._torch.cuda.synchronize()
        self._flush()
        wall_start = _monotonic_ns()
        self._start.record()
        call()
        self._end.record()
        self._torch.cuda.synchronize()
        wall_ms = (_monotonic_ns() - wall_start) / 1e6
        return self._start.elapsed_time(self._end), wall_ms


class SynchronizedCudaTimer(CudaTimer):
    """The end event is recorded only after a device-wide synchronize, so work the call left on
    another stream is inside the pair. The synchronize's own latency (host wake-up plus the end
    event's launch) is measured on an empty call and subtracted; used when the plain pair missed work."""

    def __init__(self, device, calibration_calls: int = 21):
        super().__init__(device)
        self.overhead_ms = statistics.median(self._timed(lambda: None)[0] for _ in range(calibration_calls))

    def _timed(self, call: Callable[[], object]) -> tuple[float, float]:
        self._torch.cuda.synchronize()
        self._flush()
        wall_start = _monotonic_ns()
        self._start.record()
        call()
        self._torch.cuda.synchronize()
        self._end.record()
        self._torch.cuda.synchronize()
        wall_ms = (_monotonic_ns() - wall_start) / 1e6
        return self._start.elapsed_time(self._end), wall_ms

    def __call__(self, call: Callable[[], object]) -> tuple[float, float]:
        timed, wall = self._timed(call)
        return max(timed - self.overhead_ms, 0.0), wall


# Work outside the event pair counts as escaped above this share of the call, or this many ms
# (below it, the synchronize's own jitter): a few microseconds hidden elsewhere is not a finding.
ESCAPED_SHARE = 0.10
ESCAPED_MIN_MS = 0.005


def escaped_work_ms(
    calls: dict[str, Callable[[], object]], timings: "Timings", synced: Callable, rounds: int = 15,
) -> dict[str, float]:
    """Per model: how much longer a call takes when the end event waits for the whole device than
    the plain event pair said, i.e. work the call left on another stream (0 when none)."""
    synced_ms: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            synced_ms[name].append(synced(call)[0])
    return {
        name: max(statistics.median(synced_ms[name]) - statistics.median(timings.times_ms[name]), 0.0)
        for name in calls
    }


def left_work_behind(escaped_ms: float, median_ms: float) -> bool:
    return escaped_ms > max(ESCAPED_SHARE * median_ms, ESCAPED_MIN_MS)


def sample(values: list[float], limit: int = 200) -> list[float]:
    """At most `limit` values spread evenly over the run, in the order they were taken."""
    if len(values) <= limit:
        return list(values)
    step = len(values) / limit
    return [values[int(i * step)] for i in range(limit)]


def timer_disagrees(times_ms: list[float], walls_ms: list[float], wall_slack_ms: float = 0.0) -> bool:
    """True when the timer's median is impossible given the wall clock's (see TAMPER_SLACK_MS);
    `wall_slack_ms` is wall time that may precede the timed region (the tail of an L2 flush)."""
    timed, wall = statistics.median(times_ms), statistics.median(walls_ms)
    return timed > wall * 1.05 + TAMPER_SLACK_MS or timed < (wall - wall_slack_ms) * 0.5 - TAMPER_SLACK_MS


@dataclass
class Timings:
    times_ms: dict[str, list[float]]
    walls_ms: dict[str, list[float]]
    wall_slack_ms: float = 0.0

    def tampered(self) -> bool:
        return any(timer_disagrees(self.times_ms[n], self.walls_ms[n], self.wall_slack_ms) for n in self.times_ms)


def time_interleaved(
    calls: dict[str, Callable[[], object]],
    timer: Callable[[Callable[[], object]], tuple[float, float]],
    plan: TimingPlan = TimingPlan(),
) -> Timings:
    """Time every call once per round, alternating, so drift in clocks or load hits all alike;
    stop when every median is precise enough (relative standard error) or the budget is spent."""
    for _ in range(plan.warmup):
        for call in calls.values():
            timer(call)
    timings = Timings({name: [] for name in calls}, {name: [] for name in calls},
                      getattr(timer, "wall_slack_ms", 0.0))
    started = _both_clocks_s()
    for rounds in range(1, plan.max_runs + 1):
        for name, call in calls.items():
            timed, wall = timer(call)
            timings.times_ms[name].append(timed)
            timings.walls_ms[name].append(wall)
        if rounds < plan.min_runs:
            continue
        precise = all(relative_standard_error(t) < plan.target_rse for t in timings.times_ms.values())
        # the budget ends by either clock: a patched (frozen) one alone cannot keep the loop going
        elapsed = max(now - then for now, then in zip(_both_clocks_s(), started))
        if precise or elapsed > plan.budget_s:
            break
    return timings


class Stages:
    """How long each stage of the timing phase took, printed to the judged process's stderr (the
    result's logs) so an operator sees where a judgement's time goes."""

    def __init__(self):
        self._last = now_s()
        self._seconds: list[tuple[str, float]] = []

    def end(self, name: str) -> None:
        now = now_s()
        self._seconds.append((name, now - self._last))
        self._last = now

    def report(self) -> None:
        import sys

        parts = ", ".join(f"{name} {seconds:.2f}" for name, seconds in self._seconds)
        print(f"[profiler_agent] timing phase (s): {parts}", file=sys.stderr, flush=True)


class HeldCudaTimer(CudaTimer):
    """The plain timer, with the GPU held after the flush (a sleep kernel) while the host launches
    the call: the call's kernels then run back to back, so a host slow to launch them (busy, or
    throttled after a compile: measured on an H100 host, 2-3x longer launch-bound calls for tens of
    seconds after a compile) does not stretch the figure. The hold adapts to the host: twice the
    longest launch of the last calls, within [MIN_HOLD_MS, MAX_HOLD_MS]; it is left out of the wall
    time given back, so the tamper check still compares like with like."""

    MIN_HOLD_MS = 0.02
    MAX_HOLD_MS = 2.0
    RECENT = 16

    def __init__(self, device):
        super().__init__(device)
        self._sleep = self._torch.cuda._sleep
        self._cycles_per_ms = self._calibrate_sleep()
        self._recent_launch_ms: list[float] = []
        self.hold_ms = self.MIN_HOLD_MS

    def _calibrate_sleep(self, cycles: int = 1_000_000) -> float:
        times = []
        for _ in range(3):
            self._start.record()
            self._sleep(cycles)
            self._end.record()
            self._torch.cuda.synchronize()
            times.append(self._start.elapsed_time(self._end))
        return cycles / max(statistics.median(times), 1e-6)

    def _adapt(self, launched_ms: float) -> None:
        self._recent_launch_ms = (self._recent_launch_ms + [launched_ms])[-self.RECENT:]
        self.hold_ms = min(self.MAX_HOLD_MS, max(self.MIN_HOLD_MS, 2 * max(self._recent_launch_ms)))

    def __call__(self, call: Callable[[], object]) -> tuple[float, float]:
        self._torch.cuda.synchronize()
        self._flush()
        hold_ms = self.hold_ms
        self._sleep(int(hold_ms * self._cycles_per_ms))
        wall_start = _monotonic_ns()
        self._start.record()
        call()
        self._end.record()
        launched_ms = (_monotonic_ns() - wall_start) / 1e6
        self._torch.cuda.synchronize()
        wall_ms = (_monotonic_ns() - wall_start) / 1e6
        self._adapt(launched_ms)
        return self._start.elapsed_time(self._end), max(wall_ms - hold_ms, 0.0)
