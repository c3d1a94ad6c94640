#!/usr/bin/env bash
# Session 6 on the H100, first call: what a judging costs with the processes started before each job
# (harness.slots, --keep-warm), over every bench bundle; then the GPU-only tests of the pool and timing.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/session6-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
python bench/judging_cost.py --cache-dir bench/.cache/cost 2>&1 | tee "$OUT/cost-warm.log"
python -m pytest -q -p no:cacheprovider tests/agent/test_slots_gpu.py tests/agent/test_timing_gpu.py 2>&1 \
  | tail -25 | tee "$OUT/gpu-tests.log"
