"""How far the timing confirmation's kernel ratio strays from the truth, call by call.

The confirmation (profiler_agent.judge.timing_confirmation) profiles a few candidate calls, then as many
reference calls, under ncu, and ranks no speedup above the ratio of the two medians. This runs the
same profiled process (profiler_agent.graders.profiled_target) under the same ncu command with many
calls of each, several times, and prints every call's kernel sum in order: what the first calls cost
beside the later ones, and the ratio the confirmation's few calls give against the ratio of all of
them and against bench/judge/launch_bound.py's truth (both models alternating).

    python bench/judge/confirmation_spread.py --out DIR [--only lb-add-layernorm] [--calls 15] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import launch_bound  # noqa: E402  (bench/judge/launch_bound.py: the truth)

from profiler_agent.judge import ncu_output, timing_confirmation  # noqa: E402
from profiler_agent.judge.ncu_profiling import ncu_command  # noqa: E402


def profiled_sums(bundle: Path, calls: int, seed: int, out: Path, env: dict) -> tuple[list[float], list[float]]:
    """Each candidate call's kernel sum, then each reference call's, from one profiled process."""
    profile = ncu_output.Profile(timing_confirmation.PROFILE.metrics, calls,
                                 timing_confirmation.CONFIRM_KERNELS_PER_CALL, cache_control="none",
                                 reference_calls=calls)
    log = out / f"spread-{bundle.name}-{seed}.csv"
    target = [sys.executable, "-m", "profiler_agent.graders.profiled_target", "--bundle", str(bundle),
              "--device", "cuda", "--calls", str(calls), "--reference-calls", str(calls)]
    settings = {"seed": seed, "reference": "torchcode.py", "candidate": "cudacode.py"}
    subprocess.run(ncu_command(shutil.which("ncu") or "ncu", log, target, calls, profile), cwd=bundle,
                   input=json.dumps(settings).encode(), env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                   check=False)
    candidate, reference = ncu_output.split_reference(ncu_output.parse_launches(log.read_text() if log.exists() else ""))
    sums = lambda launches: [sum(k.duration_ms for k in group) for group in ncu_output.group_calls(launches, calls)]  # noqa: E731
    return sums(candidate), sums(reference)


def ratio(reference: list[float], candidate: list[float]) -> float | None:
    return statistics.median(reference) / statistics.median(candidate) if reference and candidate else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", action="append", help="bundle names under bench/fixtures/bundles (repeatable)")
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    few = timing_confirmation.CONFIRM_CALLS
    rows = []
    for name in args.only or ["lb-add-layernorm"]:
        bundle = launch_bound.BUNDLES / name
        env = {"TORCH_EXTENSIONS_DIR": tempfile.mkdtemp(prefix=f"spread-{name}-"), "PYTHONPATH": str(REPO)}
        truth = launch_bound.kernel_sums(bundle, args.out, env, "call")
        print(f"{name}: truth {truth.speedup and round(truth.speedup, 4)} (reference {truth.reference_ms} ms, "
              f"candidate {truth.candidate_ms} ms, per-call ratios {truth.spread})", flush=True)
        row = {"bundle": name, "truth": truth.speedup, "truth_reference_ms": truth.reference_ms,
               "truth_candidate_ms": truth.candidate_ms, "runs": []}
        for run in range(args.runs):
            candidate, reference = profiled_sums(bundle, args.calls, 1000 + run, args.out, env)
            run_row = {"candidate_ms": [round(v, 5) for v in candidate], "reference_ms": [round(v, 5) for v in reference],
                       f"ratio_first_{few}": ratio(reference[:few], candidate[:few]),
                       "ratio_all": ratio(reference, candidate),
                       "ratio_of_minima": min(reference) / min(candidate) if reference and candidate else None}
            row["runs"].append(run_row)
            print(f"  run {run}: candidate {run_row['candidate_ms']}\n         reference {run_row['reference_ms']}\n"
                  f"         ratio of the first {few}: {run_row[f'ratio_first_{few}']}, of all: {run_row['ratio_all']}, "
                  f"of the minima: {run_row['ratio_of_minima']}", flush=True)
        rows.append(row)
    (args.out / "confirmation-spread.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
