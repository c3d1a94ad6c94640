#!/usr/bin/env bash
# Session 6 on the H100: what a judging costs with the processes started before each job
# (harness.slots, --keep-warm), over every bench bundle, back to back (a full queue) or GAP seconds
# apart; then the GPU-only tests of the pool and of the timing. GAP=8 bash bench/session6_gpu.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/session6-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python bench/judging_cost.py --cache-dir bench/.cache/cost --gap "${GAP:-0}" 2>&1 | tee "$OUT/cost-warm.log"
if [ -z "${SKIP_TESTS:-}" ]; then
  python -m pytest -q -p no:cacheprovider tests/agent/test_slots_gpu.py tests/agent/test_timing_gpu.py 2>&1 \
    | tail -25 | tee "$OUT/gpu-tests.log"
fi
