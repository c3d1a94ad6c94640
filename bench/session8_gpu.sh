#!/usr/bin/env bash
# Session 8 on the H100. PART=probe: why honest forward+backward bundles got `timer_tampered`
# (bench/backward_tamper_probe.py per call: event pair, wall clock, flush reads held, launch time),
# then whether nvcc's host and device front ends overlap with --threads 2 (bench/nvcc_stages.py).
#   PART=probe bash bench/session8_gpu.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/session8-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ "${PART:-probe}" = probe ]; then
  for b in examples/ce-fused-backward examples/attention-backward; do
    python bench/backward_tamper_probe.py "$b" 40 2>&1 | tee "$OUT/tamper-$(basename $b).log" | head -40
  done
  python bench/nvcc_stages.py --only narrow+context,narrow+context-threads2 2>&1 | tee "$OUT/nvcc-threads.log" \
    | cut -c1-300
fi
