"""Where a judging's wall time goes: each process the agent starts, and what a bare process costs.

    python bench/judging_cost.py [--bundle bench/bundles/lb-matmul-relu] [--judgings 3]

Judges the bundle `--judgings` times (the first builds it, the rest are warm, as a rejudge or a
second submission of the same sources) and prints, per judging, the wall seconds of every process
the agent started (the judged child, the verifier / trusted checks, ncu's run) beside the result's
own durations_s. Then the floor those processes stand on: a bare `python -c "import torch"`, the
same with CUDA initialized, and that under ncu with nothing profiled.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROCESS_WALLS: list[tuple[str, float]] = []


def _label(command: list[str]) -> str:
    if "-m" in command:
        module = command[command.index("-m") + 1]
        return ("ncu:" if "ncu" in Path(command[0]).name else "") + module.rsplit(".", 1)[-1]
    return Path(command[0]).name


def instrument() -> None:
    """Wrap run_sandboxed where the harness imported it, to record each process's wall time."""
    from profiler_agent.harness import judge, trusted
    from profiler_agent.measure import ncu_run

    for module in (judge, trusted, ncu_run):
        original = module.run_sandboxed

        def timed(command, *args, _original=original, **kwargs):
            started = time.monotonic()
            try:
                return _original(command, *args, **kwargs)
            finally:
                PROCESS_WALLS.append((_label(command), time.monotonic() - started))

        module.run_sandboxed = timed


def bare_costs() -> list[tuple[str, float]]:
    rows = []
    probes = {
        "python + import torch": "import torch",
        "python + import torch + CUDA context": "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()",
    }
    for name, code in probes.items():
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", code], check=False, capture_output=True)
        rows.append((name, time.monotonic() - started))
    ncu = shutil.which("ncu")
    if ncu:
        started = time.monotonic()
        subprocess.run([ncu, "--nvtx", "--nvtx-include", "nothing/", "--csv", sys.executable, "-c",
                        probes["python + import torch + CUDA context"]], check=False, capture_output=True)
        rows.append(("the same under ncu, nothing profiled", time.monotonic() - started))
        started = time.monotonic()
        subprocess.run([ncu, "--version"], check=False, capture_output=True)
        rows.append(("ncu --version", time.monotonic() - started))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", default=str(REPO / "bench" / "bundles" / "lb-matmul-relu"))
    parser.add_argument("--judgings", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    instrument()
    from profiler_agent.bundles.bundle import locate_bundle
    from profiler_agent.harness.judge import JudgeOptions, judge_bundle

    bundle = locate_bundle(Path(args.bundle))
    for judging in range(args.judgings):
        PROCESS_WALLS.clear()
        started = time.monotonic()
        result = judge_bundle(bundle, JudgeOptions(device=args.device))
        wall = time.monotonic() - started
        durations = {k: round(v, 2) for k, v in result["durations_s"].items() if isinstance(v, (int, float))}
        confirmation = (result["timing"] or {}).get("confirmation") or {}
        print(f"judging {judging + 1}: {result['status']} flags {result['flags']} wall {wall:.1f} s; "
              f"confirmed {confirmation.get('confirmed')}; durations_s {durations}")
        # processes started ahead overlap the judged one: each wall runs from its start to its end
        print("   processes (start to end, overlapping): "
              + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in PROCESS_WALLS), flush=True)
    print("\nbare processes:")
    for name, seconds in bare_costs():
        print(f"   {name}: {seconds:.1f} s")


if __name__ == "__main__":
    main()
