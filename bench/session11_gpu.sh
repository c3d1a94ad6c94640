#!/usr/bin/env bash
# Session 11 on the H100: the kernel census now profiles through torch.autograd.profiler (Kineto, without
# torch.profiler's import of torch._inductor) and outputs are compared chunk by chunk on the CPU.
# The census, comparison, zygote and GPU tests; examples/001-example judged (its census must see its own
# kernel); then the integrity bench (every flag and verdict as expected).
#   OUT=/tmp/s11 bash bench/session11_gpu.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # the bench/ scripts import profiler_agent
OUT=${OUT:-/tmp/session11-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python -m pytest -q -p no:cacheprovider tests/agent/test_kernel_census.py tests/agent/test_correctness.py \
  tests/agent/test_zygote.py tests/agent/test_slots_gpu.py tests/agent/test_timing_gpu.py 2>&1 | tail -6 \
  | tee "$OUT/gpu-tests.log"
python -m profiler_agent judge examples/001-example --device cuda --json "$OUT/example.json" 2>&1 | tail -16 \
  | tee "$OUT/example.log"
python -c "import json; r=json.load(open('$OUT/example.json')); print(r['status'], r['flags'], r.get('kernels'))" \
  | cut -c1-600 | tee -a "$OUT/example.log"
python bench/integrity_gpu.py --out "$OUT/integrity" --deadline 420 2>&1 | tee "$OUT/integrity.log" \
  | grep -E '^\|| median|OK|UNEXPECTED' | cut -c1-300
