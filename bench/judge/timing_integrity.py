"""Timing integrity on a GPU: fresh inputs, work outside the event pair, batched capture checks.

    python bench/judge/timing_integrity.py [--out DIR] [--only NAME ...] [--repeat N]

Judges a few bundles of the shared bench candidate (bench/fixtures/kernels/cudacode.py, one compile) and
prints one row per bundle: status, flags, medians, the batched figure, and what the judged
process logged about work outside the pair and about batched timing. Then checks CUDA-graph
capture directly on ReLUs launched on torch's stream, the legacy default stream and the
per-thread default stream. What a right row shows is in its `expected` column.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import RELU_REFERENCE, candidate_module, judge, make_bundle  # noqa: E402

ROWS = [
    # name, op, ReLU size, what a right verdict is
    ("honest relu 16M", "relu", 1 << 24, "passed, no flag"),
    ("honest relu 1M (small kernel)", "relu", 1 << 20, "passed, no flag, median as before (~0.008 ms on an H100)"),
    # an output still being written when the call returns is read unfinished on every judging
    # (profiler_agent/trials/side_streams.py)
    ("side stream, waits, never joins", "side_stream", 1 << 24, "wrong_answer: output still being written"),
    ("side stream, waits for nothing", "side_stream_early", 1 << 24, "wrong_answer: output still being written"),
    ("side stream, joined at the end", "side_stream_joined", 1 << 24, "unsynchronized_work, median ~ honest 16M"),
    ("legacy default stream kernel", "legacy_stream", 1 << 24, "passed; batched: plain calls or a checked graph"),
    ("per-thread default stream kernel", "per_thread_stream", 1 << 24,
     "passed; batched: plain calls (graph refused), batched_ms ~ honest"),
    ("memo on (address, _version)", "memo", 1 << 24, "input_memoized, median ~ honest 4-pass"),
    ("the same 4 passes, no memo", "memo_honest", 1 << 24, "passed, no input_memoized"),
]


def _log_lines(stderr: str, *needles: str) -> str:
    return " | ".join(line.split("] ", 1)[-1] for line in stderr.splitlines()
                      if line.startswith("[profiler_agent]") and any(n in line for n in needles))


def judged_rows(root: Path, only, repeat: int = 1) -> list[dict]:
    rows = []
    for (index, (name, op, size, expected)), judging in ((row, i) for row in enumerate(ROWS) for i in range(repeat)):
        if only and op not in only:
            continue
        bundle = make_bundle(root, f"{index}-{op}-{judging}", RELU_REFERENCE.format(n=size), op=op)
        result = judge(bundle, timing_budget_s=1.0, timeout_s=300.0)
        timing = result["timing"]
        cand, ref = timing["candidate"] or {}, timing["reference"] or {}
        rows.append({
            "name": name, "expected": expected, "status": result["status"], "flags": result["flags"],
            "reference_ms": ref.get("median_ms"), "candidate_ms": cand.get("median_ms"),
            "candidate_batched_ms": cand.get("batched_ms"), "speedup": timing["speedup"],
            "reason": result.get("reason"),
            "outside": _log_lines(result["logs"]["stderr"], "work outside", "timed again"),
            "repeated": _log_lines(result["logs"]["stderr"], "repeated input"),
            "batched": _log_lines(result["logs"]["stderr"], "batched timing"),
            "bundle": str(bundle),
        })
        row = rows[-1]
        print(f"{name:36} {row['status']:13} {','.join(row['flags']) or '-':40} ref {_ms(row['reference_ms'])} "
              f"cand {_ms(row['candidate_ms'])} batched {_ms(row['candidate_batched_ms'])}"
              + (f" reason: {row['reason']}" if row["reason"] else ""), flush=True)
    return rows


def _ms(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def capture_checks(bundle: Path) -> list[dict]:
    """graph_rotation on 4 copies of a 16M ReLU launched on each stream kind: kept or refused, why."""
    import torch

    from profiler_agent.measure import batch_timers as batched_timing

    ext = candidate_module(bundle).ext
    kinds = {
        "torch's current stream": lambda x: ext.k_relu(x),
        "legacy default stream (0)": lambda x: ext.k_relu_on(x, 0),
        "per-thread default stream": lambda x: ext.k_relu_on(x, 1),
    }
    out = []
    for kind, fn in kinds.items():
        sets = [[torch.randn(1 << 24, device="cuda")] for _ in range(4)]
        calls = [lambda args=args: fn(*args) for args in sets]
        rotation, why = batched_timing.graph_rotation(calls, sets)
        out.append({"stream": kind, "graph kept": rotation is not None, "why": why})
        print(f"capture on {kind:28} kept={rotation is not None!s:5} {why}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "timing-integrity",
                        help="timing.json goes here (default %(default)s)")
    parser.add_argument("--only", nargs="*", default=(), help="ops to judge (e.g. side_stream_early memo)")
    parser.add_argument("--repeat", type=int, default=1, help="judgings of each bundle (a verdict must not change)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-timing-"))
    rows = judged_rows(root, set(args.only), args.repeat)
    print()
    print("| case | expected | status | flags | ref ms | cand ms | cand batched ms | outside the pair | batched |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['expected']} | {r['status']} | {', '.join(r['flags']) or '-'} | "
              f"{_ms(r['reference_ms'])} | {_ms(r['candidate_ms'])} | {_ms(r['candidate_batched_ms'])} | "
              f"{r['outside']} | {r['batched']} |")
    for r in rows:
        print(f"{r['name']}: {r['repeated']}")
    captures = capture_checks(Path(rows[0]["bundle"])) if rows else []
    if args.out:  # always, unless given empty
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "timing.json").write_text(json.dumps({"rows": rows, "captures": captures}, indent=1))


if __name__ == "__main__":
    main()
