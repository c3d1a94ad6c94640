#!/usr/bin/env bash
# Session 7 on the H100. PART=cost: the energy counter's resolution (bench/energy_window.py), then
# what a judging costs over every bench bundle (the pool's processes make their CUDA contexts before
# the job; the confirmation's and the timing's cost per stage printed), GAP seconds between jobs, and
# the pool's GPU test. PART=cold: the agent's precompiled headers prepared, then the cold compile as
# a judging with its processes waiting sees it (judging_cost.py --cold).
# PART=lb: item 6, the launch-bound bundles judged twice from a cold build, then Nsight Compute's
# truth in the call's cache state (run once with a floor from spin-kernel probes, rejected:
# bench/results/2026-11-24-s7/lb-drift-spin-floor-rejected.log).
#   PART=cost GAP=5 bash bench/session7_gpu.sh;  PART=cold bash bench/session7_gpu.sh;  PART=lb bash ...
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/session7-out}
CACHE=bench/.cache/cost
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ "${PART:-cost}" = cost ]; then
  [ -n "${SKIP_ENERGY:-}" ] || python bench/energy_window.py 2>&1 | tee "$OUT/energy-window.log"
  python bench/judging_cost.py --cache-dir "$CACHE" --gap "${GAP:-5}" ${BUNDLES:-} 2>&1 | tee "$OUT/cost-warm.log"
  [ -n "${SKIP_TESTS:-}" ] || python -m pytest -q -p no:cacheprovider tests/agent/test_slots_gpu.py 2>&1 | tail -3 \
    | tee "$OUT/gpu-tests.log"
elif [ "${PART}" = lb ]; then
  python bench/launch_bound.py drift --out "$OUT" --repeats 2 2>&1 | tee "$OUT/lb-drift.log"
  python bench/launch_bound.py truth --out "$OUT" --cache-state call 2>&1 | tee "$OUT/lb-truth.log"
else
  python -m profiler_agent prepare-pch --device cuda --cache-dir "$CACHE" 2>&1 | tee "$OUT/prepare-pch.log"
  python bench/judging_cost.py --cache-dir "$CACHE" --gap 3 --bundle bench/bundles/lb-mlp-gelu \
    --cold examples/001-example --cold bench/bundles/lb-matmul-relu --cold bench/bundles/lb-add-layernorm 2>&1 \
    | tee "$OUT/cold.log"
fi
