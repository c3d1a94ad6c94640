"""Input cases on a GPU: each timed case of a problem confirmed on its own kernel record.

    RESULTS=$OUT python bench/judge/input_cases.py          (a device machine; torch and the agent alone)

Judges bench/fixtures/bundles/cases-honest (the reference's GELU in five elementwise kernels, the
candidate's fused: a different speedup per case) and cases-forger (honest on its first timed case, its
times divided by 4 on the tall one) with the agent's own judge_bundle, and checks:
- honest: passed, unflagged, every timed case confirmed, and the ranked speedup within 5% of the
  geometric mean of the cases' kernel ratios (ncu's `gpu__time_duration` sums of both models);
- forger: `timing_unconfirmed`, its tall case not confirmed, and its ranked speedup never above the
  geometric mean of the cases' kernel ratios.
Writes RESULTS/input-cases/<gpu>.json: each judging's status, flags, figures per case, wall time and
the checks; exits 1 when a check fails.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.judge.harness import REPO, judge  # noqa: E402

BUNDLES = REPO / "bench" / "fixtures" / "bundles"
TOLERANCE = 0.05


def gpu_label() -> str:
    import torch

    name = torch.cuda.get_device_name(0).lower() if torch.cuda.is_available() else "cpu"
    return next((word for word in name.replace("-", " ").split() if word[:1].isalpha() and word[1:].isdigit()), "gpu")


def kernel_mean(cases: dict) -> float | None:
    ratios = [case.get("kernel_speedup") for case in cases.values()]
    if not ratios or not all(ratios):
        return None
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def checks_for(name: str, result: dict) -> dict[str, bool]:
    cases = (result.get("timing") or {}).get("cases") or {}
    speedup, bound = result["timing"].get("speedup"), kernel_mean(cases)
    if name == "cases-honest":
        return {"passed": result["status"] == "passed",
                "unflagged": "timing_unconfirmed" not in result["flags"],
                "every case confirmed": bool(cases) and all(c.get("confirmed") is True for c in cases.values()),
                "within 5% of the kernels": bool(speedup and bound and abs(speedup / bound - 1) <= TOLERANCE)}
    return {"flagged": "timing_unconfirmed" in result["flags"],
            "tall case not confirmed": (cases.get("tall") or {}).get("confirmed") is False,
            "never above the kernels": bool(speedup and bound and speedup <= bound * (1 + 1e-9))}


def main() -> int:
    out = Path(os.environ.get("RESULTS", REPO / "bench" / "results")) / "input-cases"
    out.mkdir(parents=True, exist_ok=True)
    record, failed = {"command": "python bench/judge/input_cases.py", "judgings": {}}, False
    for name in ("cases-honest", "cases-forger"):
        result = judge(BUNDLES / name, timing_budget_s=1.0)
        checks = checks_for(name, result)
        failed |= not all(checks.values())
        record["judgings"][name] = {
            "status": result["status"], "reason": result.get("reason"), "flags": result["flags"],
            "speedup": result["timing"].get("speedup"), "cases": result["timing"].get("cases"),
            "kernel_mean": kernel_mean(result["timing"].get("cases") or {}),
            "wall_s": round(result["_bench_wall_s"], 2), "durations_s": result.get("durations_s"), "checks": checks}
        print(json.dumps({name: record["judgings"][name]}, indent=1))
        notes = [line for line in result["logs"]["stderr"].splitlines() if "timing confirmation" in line or "case \"" in line]
        print("\n".join(notes[-20:]))
    record["gpu"] = gpu_label()
    path = out / f"{record['gpu']}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"record: {path}; {'a check FAILED' if failed else 'every check holds'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
