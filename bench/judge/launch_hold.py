"""Per-call timing of launch-bound models on a busy or throttled host: the event timer with one
L2-flush read before each call (as before) against the harness's timer, whose flush reads adapt to
hold the GPU while the host launches the call, so the call's kernels run back to back whatever the
CPU's speed.

    python bench/judge/launch_hold.py [--burn N] [--seconds S]

`--burn N` keeps N processes busy on the CPU while timing (a host that is slow to launch).
Prints per bundle and model: the one-read median and the held median (ms).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
BUNDLES = ["lb-matmul-relu", "lb-mlp-gelu", "lb-add-layernorm"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--burn", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--only", action="append")
    args = parser.parse_args()

    import torch

    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.bundles import module_loading as loading
    from profiler_agent.measure import timing

    device = torch.device("cuda")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burn)]
    try:
        print(f"{'bundle':18} {'model':10} {'plain ms':>9} {'held ms':>9}", flush=True)
        for name in args.only or BUNDLES:
            bundle = REPO / "bench" / "fixtures" / "bundles" / name
            sys.path.insert(0, str(bundle))
            api = loading.reference_api(bundle / "torchcode.py")
            module = loading.import_file(bundle / "cudacode.py", f"candidate_{name.replace('-', '_')}")
            models = {
                "reference": loading.build_model(api.Model, api.get_init_inputs, 0, device),
                "candidate": loading.build_model(module.ModelNew, api.get_init_inputs, 0, device),
            }
            inputs = make_inputs(api.get_inputs, 1, device)
            calls = {n: (lambda m=m: m(*inputs)) for n, m in models.items()}
            plan = timing.TimingPlan(budget_s=args.seconds)
            with torch.no_grad():
                plain = timing.time_interleaved(calls, timing.CudaTimer(device, max_flush_reads=1), plan)
                held = timing.time_interleaved(calls, timing.CudaTimer(device), plan)
            for n in calls:
                held_ms = statistics.median(held.times_ms[n])
                print(f"{name:18} {n:10} {statistics.median(plain.times_ms[n]):9.4f} {held_ms:9.4f}", flush=True)
            sys.path.remove(str(bundle))
    finally:
        for burner in burners:
            burner.kill()


if __name__ == "__main__":
    main()
