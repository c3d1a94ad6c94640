#!/usr/bin/env bash
# One device call that checks the agent's GPU-only paths and writes what it saw under $OUT:
# device backend + peak TFLOP/s + power trace, Nsight Compute in the result (sandbox uid and root),
# the kernel census, and cgroup limits. Usage (repo root): OUT=dir bash bench/judge/gpu_paths.sh
set -uo pipefail
OUT=${OUT:-gpu-checks}
mkdir -p "$OUT"
log() { echo "== $*"; }

log "device backend"
python - <<'PY'
from profiler_agent import devices
from profiler_agent.devices import device_info
b = devices.backend(); print(b.vendor, b.driver_version(), b.inventory())
g = device_info.judged_gpu(); print(g.facts(), g.peak_gbps(), g.sample(), g.energy_mj())
print(device_info.describe_device("cuda"))
PY

log "fp16 matmul: peak_tflops, pct_peak_flops, trace, census (torch.mm only: no_custom_kernel)"
MM=$(mktemp -d)
cat > "$MM/torchcode.py" <<'PY'
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b): return a @ b
def get_inputs(): return [torch.randn(4096, 4096, dtype=torch.float16), torch.randn(4096, 4096, dtype=torch.float16)]
def get_init_inputs(): return []
PY
printf 'import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, a, b): return torch.mm(a, b)\n' > "$MM/cudacode.py"
python -m profiler_agent judge "$MM" --device cuda --json "$OUT/mm.json" > "$OUT/mm.txt" 2>&1; echo "exit $?"
python - "$OUT/mm.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["telemetry"]
print(r["status"], r["flags"], r["device"]["name"], "peak_tflops", r["device"]["peak_tflops"],
      "pct_peak_flops", r["metrics"]["pct_peak_flops"], "tflops", r["metrics"]["tflops"])
print("trace points", len(t["trace"]), t["trace"][:2], "energy", t["energy_j_per_call"])
print("kernels", json.dumps(r.get("kernels"))[:400])
print("timing", {s: {k: r["timing"][s][k] for k in ("median_ms", "batched_ms", "overhead_pct")} for s in ("reference", "candidate")})
PY

log "ncu in the result, judged as the sandbox uid"
python -m profiler_agent judge examples/001-example --device cuda --ncu --json "$OUT/ncu-sandbox.json" > "$OUT/ncu-sandbox.txt" 2>&1; echo "exit $?"
log "ncu in the result, judged as root (check only)"
PROFILER_AGENT_SANDBOX_UID=0 python -m profiler_agent judge examples/001-example --device cuda --ncu --json "$OUT/ncu-root.json" > "$OUT/ncu-root.txt" 2>&1; echo "exit $?"
python - "$OUT/ncu-sandbox.json" "$OUT/ncu-root.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path, r["status"], "candidate median", r["timing"]["candidate"]["median_ms"], "bytes", r["metrics"]["bytes"])
    print("  ncu", json.dumps(r["ncu"]))
    print("  notes", [l for l in r["logs"]["stderr"].splitlines() if "ncu" in l][-3:])
PY

log "cgroup limits for judged processes (memory.max, pids.max, cgroup.kill)"
python tests/agent/test_cgroup.py --device cuda; echo "exit $?"

log "job protocol on the device: start -> secret -> bundle -> judge -> result; a foreign URL refused"
python bench/judge/job_protocol.py --device cuda 2>&1 | tail -8 | tee "$OUT/trust.txt"
