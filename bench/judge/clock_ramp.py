"""How a GPU's clock and a launch-bound model's per-call time move after the GPU sat idle (as it does
while a bundle compiles): was it the first judging's drift? On the H100 the clock stayed at 1980 MHz
through 40 s idle with a context open: idle clocks were not the cause of the first judging's drift.

    python bench/judge/clock_ramp.py --idle 40 --seconds 3 [--bundle bench/fixtures/bundles/lb-mlp-gelu]

Idles `--idle` seconds (SM clock read every 0.5 s), then calls the bundle's reference back-to-back for `--seconds`, each call timed with events, while
a thread reads the SM clock every 10 ms. Prints one line per 100 ms: calls, median ms, SM clock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", type=Path, default=REPO / "bench" / "fixtures" / "bundles" / "lb-mlp-gelu")
    parser.add_argument("--idle", type=float, default=40.0)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()

    import pynvml
    import torch

    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.bundles import module_loading as loading

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    sm_clock = lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)  # noqa: E731
    device = torch.device("cuda")
    api = loading.reference_api(args.bundle / "torchcode.py")
    model = loading.build_model(api.Model, api.get_init_inputs, 0, device)
    inputs = make_inputs(api.get_inputs, 1, device)
    with torch.no_grad():
        model(*inputs)
    torch.cuda.synchronize()

    idle_readings = []
    until = time.perf_counter() + args.idle
    while time.perf_counter() < until:
        idle_readings.append(sm_clock())
        time.sleep(0.5)
    print(f"idle {args.idle:g} s: SM clock {idle_readings[0]} -> {idle_readings[-1]} MHz", flush=True)

    clocks: list[tuple[float, int]] = []
    stop = threading.Event()
    origin = time.perf_counter()

    def sample() -> None:
        while not stop.wait(0.01):
            clocks.append((time.perf_counter() - origin, sm_clock()))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls: list[tuple[float, float]] = []
    with torch.no_grad():
        while time.perf_counter() - origin < args.seconds:
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            calls.append((time.perf_counter() - origin, start.elapsed_time(end)))
    stop.set()
    thread.join()
    print(f"{'t (s)':>6} {'calls':>6} {'median ms':>10} {'SM MHz':>7}")
    window = 0.1
    for i in range(int(args.seconds / window)):
        lo, hi = i * window, (i + 1) * window
        times = [ms for t, ms in calls if lo <= t < hi]
        mhz = [c for t, c in clocks if lo <= t < hi]
        if times:
            print(f"{lo:6.1f} {len(times):6d} {statistics.median(times):10.4f} "
                  f"{(statistics.median(mhz) if mhz else 0):7.0f}")


if __name__ == "__main__":
    main()
