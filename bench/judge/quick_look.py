"""A few judgings on the GPU with everything a result holds printed: a quick look before the
long benches (python bench/judge/quick_look.py OUT_DIR [KERNEL...]; kernels as in harness_gpu.TIMED
or hostile ops of bench/fixtures/kernels/cudacode.py, e.g. side_stream)."""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.judge.harness import RELU_REFERENCE, TIMED, judge, make_bundle  # noqa: E402

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
root = Path(tempfile.mkdtemp(prefix="quick-"))
timed = {name: (ref, n, op) for name, ref, n, op in TIMED}
for name in sys.argv[2:] or ["relu-16M"]:
    ref, n, op = timed.get(name, (RELU_REFERENCE, 1 << 24, name))
    bundle = make_bundle(root, name, ref.format(n=n), op=op)
    result = judge(bundle, timing_budget_s=1.0)
    (out / f"{name}.json").write_text(json.dumps(result, indent=1))
    t = result["timing"]
    print(name, result["status"], result["flags"], "wall", round(result["_bench_wall_s"], 1), "durations", result["durations_s"])
    for side in ("reference", "candidate"):
        s = t[side]
        print(f"  {side}: median {s['median_ms']} batched {s.get('batched_ms')} overhead {s.get('overhead_pct')}% runs {s['runs']}")
    print("  stderr:", [line for line in result["logs"]["stderr"].splitlines() if "profiler_agent" in line][-3:])
    print("  device:", result["device"], "metrics:", result["metrics"])
    print("  telemetry:", {k: v for k, v in result["telemetry"].items() if k != "trace"}, "trace points", len(result["telemetry"].get("trace") or []))
    for key in ("kernels", "ncu"):
        if key in result:
            print(f"  {key}:", json.dumps(result[key])[:600])
    print("  correctness:", result["correctness"], flush=True)
