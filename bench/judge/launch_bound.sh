#!/usr/bin/env bash
# The launch-bound bundles (bench/fixtures/bundles/lb-*) on one GPU (bench/judge/launch_bound.py):
# - drift: each bundle judged twice from a fresh build cache, the judging right after its compile against
#   the next one (speedup, both medians, each model's per-call drift);
# - truth: the true speedup from Nsight Compute, both models in one profile in the call's cache state;
#   TRUTH_RUNS="1 2" profiles twice, to see how far the truth moves between runs.
# Writes RESULTS/launch-bound/: drift.log, drift.json, truth.log and truth-call.json (truth2.log,
# truth2-call.json... for the runs after the first), gpu.txt, the scenario's record (launch-bound.json).
#   bash bench/judge/launch_bound.sh            (~5 min on an H100; RESULTS=$OUT on a device machine)
#   PART=truth TRUTH_RUNS="1 2" bash bench/judge/launch_bound.sh
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for launch-bound)
gpu_facts "$OUT_DIR"

drift() {
  "$PYTHON" bench/judge/launch_bound.py drift --out "$WORK/drift" --repeats 2 2>&1 | cut -c1-600
  cp "$WORK/drift/drift.json" "$OUT_DIR/drift.json"
}

truth_name() { if [ "$1" = 1 ]; then echo truth; else echo "truth$1"; fi; }

truth() {
  local name
  name=$(truth_name "$1")
  "$PYTHON" bench/judge/launch_bound.py truth --out "$WORK/$name" --cache-state call 2>&1 | grep -v '^\[bench\]' \
    | cut -c1-400
  cp "$WORK/$name/truth-call.json" "$OUT_DIR/$name-call.json"
}

for part in ${PART:-truth drift}; do
  case $part in
    drift) step drift drift > >(tee "$OUT_DIR/drift.log") 2>&1 ;;
    truth) for run in ${TRUTH_RUNS:-1}; do
             step "truth$run" truth "$run" > >(tee "$OUT_DIR/$(truth_name "$run").log") 2>&1
           done ;;
    *) echo "unknown part $part (truth, drift)" >&2; exit 2 ;;
  esac
done
write_record "$OUT_DIR" launch-bound
