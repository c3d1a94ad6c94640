#!/usr/bin/env bash
# The agent's GPU-only paths, in one device call. Parts (PART="checks tests example" by default):
# - checks: the device backend, peak TFLOP/s and power trace of an fp16 matmul judging, Nsight Compute in
#   the result (judged as the sandbox's user and as root), the kernel census (torch.mm alone: no custom
#   kernel), cgroup limits of judged processes, the job protocol against a small real site;
# - tests: the tests that run only on a GPU (the pool's processes, timing, the zygote, the kernel census,
#   the output comparison, the sandbox and its builds, telemetry);
# - example: examples/001-example judged; its census must name the example's own kernel.
# Writes RESULTS/gpu-paths/: gpu-checks.log, gpu-tests.log, example-census.json and .log, gpu.txt, and the
# scenario's record (gpu-paths.json).
#   bash bench/judge/gpu_paths.sh            (~6 min on an H100; RESULTS=$OUT on a device machine)
#   PART=tests TESTS="tests/agent/test_zygote.py" bash bench/judge/gpu_paths.sh
source "$(dirname "$0")/../gpu_scenario.sh"
set -o pipefail
OUT_DIR=$(results_for gpu-paths)
gpu_facts "$OUT_DIR"
log() { echo "== $*"; }
GPU_TESTS=(tests/agent/test_slots_gpu.py tests/agent/test_timing_gpu.py tests/agent/test_zygote.py
  tests/agent/test_kernel_census.py tests/agent/test_correctness.py tests/agent/test_sandbox.py
  tests/agent/test_builds.py tests/agent/test_telemetry.py)

gpu_checks() {
log "device backend"
"$PYTHON" - <<'PY'
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
"$PYTHON" -m profiler_agent judge "$MM" --device cuda --json "$WORK/mm.json" > "$WORK/mm.txt" 2>&1; echo "exit $?"
"$PYTHON" - "$WORK/mm.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["telemetry"]
print(r["status"], r["flags"], r["device"]["name"], "peak_tflops", r["device"]["peak_tflops"],
      "pct_peak_flops", r["metrics"]["pct_peak_flops"], "tflops", r["metrics"]["tflops"])
print("trace points", len(t["trace"]), t["trace"][:2], "energy", t["energy_j_per_call"])
print("kernels", json.dumps(r.get("kernels"))[:400])
print("timing", {s: {k: r["timing"][s][k] for k in ("median_ms", "batched_ms", "overhead_pct")} for s in ("reference", "candidate")})
PY

log "ncu in the result, judged as the sandbox uid"
"$PYTHON" -m profiler_agent judge examples/001-example --device cuda --ncu --json "$WORK/ncu-sandbox.json" > "$WORK/ncu-sandbox.txt" 2>&1; echo "exit $?"
log "ncu in the result, judged as root (check only)"
PROFILER_AGENT_SANDBOX_UID=0 "$PYTHON" -m profiler_agent judge examples/001-example --device cuda --ncu --json "$WORK/ncu-root.json" > "$WORK/ncu-root.txt" 2>&1; echo "exit $?"
"$PYTHON" - "$WORK/ncu-sandbox.json" "$WORK/ncu-root.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path, r["status"], "candidate median", r["timing"]["candidate"]["median_ms"], "bytes", r["metrics"]["bytes"])
    print("  ncu", json.dumps(r["ncu"]))
    print("  notes", [l for l in r["logs"]["stderr"].splitlines() if "ncu" in l][-3:])
PY

log "cgroup limits for judged processes (memory.max, pids.max, cgroup.kill)"
"$PYTHON" tests/agent/test_cgroup.py --device cuda; echo "exit $?"

log "job protocol on the device: start -> secret -> bundle -> judge -> result; a foreign URL refused"
"$PYTHON" bench/judge/job_protocol.py --device cuda 2>&1 | tail -8
}

gpu_tests() {
  # shellcheck disable=SC2086
  "$PYTHON" -m pytest -q -p no:cacheprovider ${TESTS:-${GPU_TESTS[*]}} 2>&1 | tail -25
}

example_census() {
  "$PYTHON" -m profiler_agent judge examples/001-example --device cuda --json "$OUT_DIR/example-census.json" 2>&1 | tail -16
  "$PYTHON" -c "import json, sys; r = json.load(open(sys.argv[1])); print(r['status'], r['flags'], r.get('kernels'))" \
    "$OUT_DIR/example-census.json" | cut -c1-600
}

for part in ${PART:-checks tests example}; do
  case $part in
    checks) step checks gpu_checks > >(tee "$OUT_DIR/gpu-checks.log") 2>&1 ;;
    tests) step tests gpu_tests > >(tee "$OUT_DIR/gpu-tests.log") 2>&1 ;;
    example) step example example_census > >(tee "$OUT_DIR/example-census.log") 2>&1 ;;
    *) echo "unknown part $part (checks, tests, example)" >&2; exit 2 ;;
  esac
done
write_record "$OUT_DIR" gpu-paths
