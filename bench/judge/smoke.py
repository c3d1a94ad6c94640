"""One judging of the shared relu bundle on the GPU, printing its logs: a cheap check before the
long bench parts."""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.judge.harness import RELU_REFERENCE, judge, make_bundle  # noqa: E402

root = Path(tempfile.mkdtemp(prefix="smoke-"))
result = judge(make_bundle(root, "relu", RELU_REFERENCE.format(n=1 << 24), op="relu"), timing_budget_s=1.0)
print(json.dumps({k: result[k] for k in ("status", "flags", "timing", "metrics", "durations_s", "device")}, indent=1))
print("--- compile log tail ---\n", result["logs"]["compile"][-3000:])
print("--- stderr tail ---\n", result["logs"]["stderr"][-3000:])
