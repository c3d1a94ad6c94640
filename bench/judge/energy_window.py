"""How long the energy window of the timing must be (measure/telemetry.ENERGY_WINDOW_S): how often
the GPU's energy counter ticks, and how far joules-per-call figures spread over repeats, for a
compute-bound and a launch-bound call: fixed windows of 0.25, 0.5 and 1 s (the former way), and
windows read from a step of the counter to a step (telemetry.energy_per_call_j) of 0.2, 0.3, 0.5 s.
A figure is "median of N" when N of 6 tries gave one (a try gives none without two steps placed precisely
enough in its 2 s).

    python bench/judge/energy_window.py          # on a CUDA host with nvidia-ml-py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


class Counter:
    def __init__(self, handle, nvml):
        self.handle, self.nvml = handle, nvml

    def energy_mj(self) -> int:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)


def tick_intervals_ms(counter: Counter, call, seconds: float = 1.0) -> list[float]:
    """Times between changes of the counter while `call` keeps the GPU busy."""
    import torch

    changes, last, started = [], counter.energy_mj(), time.perf_counter()
    while time.perf_counter() - started < seconds:
        call()
        torch.cuda.synchronize()
        value = counter.energy_mj()
        if value != last:
            changes.append(time.perf_counter())
            last = value
    return [(b - a) * 1000 for a, b in zip(changes, changes[1:])]


def fixed_window_j(call, synchronize, now_s, counter, window_s: float) -> float | None:
    """The former way: the counter read before and after `window_s` of calls."""
    before = counter.energy_mj()
    synchronize()
    started, calls = now_s(), 0
    while True:
        call()
        calls += 1
        if calls % 10 == 0:
            synchronize()
            if now_s() - started >= window_s:
                break
    after = counter.energy_mj()
    return (after - before) / 1000.0 / calls if after > before else None


def spread(name: str, measure, repeats: int = 6) -> None:
    started = time.perf_counter()
    figures = [f for f in (measure() for _ in range(repeats)) if f is not None]
    seconds = (time.perf_counter() - started) / repeats
    if not figures:
        print(f"   {name}: no figure in {repeats} tries, {seconds:.2f} s each", flush=True)
        return
    median = statistics.median(figures)
    print(f"   {name}: {median * 1e3:.4f} mJ/call median of {len(figures)}, spread (max-min)/median "
          f"{(max(figures) - min(figures)) / median:.3f}, {seconds:.2f} s each", flush=True)


def main() -> None:
    import pynvml
    import torch

    from profiler_agent.measure.telemetry import ENERGY_PRECISION, energy_per_call_j

    pynvml.nvmlInit()
    counter = Counter(pynvml.nvmlDeviceGetHandleByIndex(0), pynvml)
    big = torch.randn(2048, 2048, device="cuda")
    small = torch.randn(256, 1024, device="cuda")
    readings = []
    for _ in range(200):
        started = time.perf_counter()
        counter.energy_mj()
        readings.append((time.perf_counter() - started) * 1e3)
    print(f"a reading of the counter takes {statistics.median(readings):.3f} ms (median of 200; max "
          f"{max(readings):.3f}); a step to step window grows until the calls within its steps' brackets are "
          f"at most {ENERGY_PRECISION:.1%} of its calls", flush=True)
    calls = {"matmul 2048 (compute-bound)": lambda: big @ big, "relu 256x1024 (launch-bound)": lambda: torch.relu(small)}
    for name, call in calls.items():
        for _ in range(20):
            call()
        intervals = tick_intervals_ms(counter, call)
        print(f"{name}: counter ticks every {statistics.median(intervals):.1f} ms (median of {len(intervals)}; "
              f"min {min(intervals):.1f}, max {max(intervals):.1f})", flush=True)
        sync, clock = torch.cuda.synchronize, time.perf_counter
        for window in (0.25, 0.5, 1.0):
            spread(f"fixed window {window:.2f} s", lambda: fixed_window_j(call, sync, clock, counter, window))
        for window in (0.2, 0.3, 0.5):
            spread(f"step to step {window:.2f} s", lambda: energy_per_call_j(call, sync, clock, counter, window))

if __name__ == "__main__":
    main()
