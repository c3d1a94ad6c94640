#!/usr/bin/env bash
# The integrity acceptance run on one GPU, in one device call: the integrity bench (bench/judge/integrity.py:
# every adversarial bundle against the outcome it must get, the honest launch-bound ones, the true speedup
# from ncu in the call's cache state), then the dataset's convolution sample judged alone (its peak TFLOP/s
# follows cuDNN's TF32 switch). Writes RESULTS/integrity/: integrity.json and its table (integrity.log),
# ds1-convolution.json, gpu.txt and the scenario's record (integrity-scenario.json).
#   bash bench/judge/integrity.sh                      (~12 min on an H200; RESULTS=$OUT on a device machine)
#   DEADLINE=300 ONLY="lb-mlp-gelu adv-side-stream" NO_TRUTH=1 SKIP_CONV=1 bash bench/judge/integrity.sh
# In 10-minute calls, two (SET: all, honest or adversarial; the truth is the honest bundles'):
#   SET=honest SKIP_CONV=1 DEADLINE=540 bash bench/judge/integrity.sh
#   SET=adversarial SKIP_CONV=1 DEADLINE=540 bash bench/judge/integrity.sh
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for integrity)
gpu_facts "$OUT_DIR"
options=(--out "$WORK/integrity" --deadline "${DEADLINE:-470}" --set "${SET:-all}")
for bundle in ${ONLY:-}; do options+=(--only "$bundle"); done
[ -z "${NO_TRUTH:-}" ] || options+=(--no-truth)

bench_integrity() {
  "$PYTHON" bench/judge/integrity.py "${options[@]}" 2>&1 | tee "$WORK/integrity-console.log" \
    | grep -E '^\|| median|adversarial|OK|UNEXPECTED' | cut -c1-400 | tee "$OUT_DIR/integrity.log"
  cp "$WORK/integrity/integrity.json" "$OUT_DIR/integrity.json"
}
step integrity bench_integrity

# The convolution sample of the exported dataset DS1 (sample PDRSLU), judged alone.
judge_convolution() {
  mkdir -p "$WORK/ds1" && tar -xzf bench/results/dataset/gpucodeforces-DS1.tar.gz -C "$WORK/ds1" &&
  "$PYTHON" -m profiler_agent judge "$WORK/ds1/gpucodeforces-DS1/samples/PDRSLU" --device cuda \
    --json "$OUT_DIR/ds1-convolution.json" 2>&1 | tail -25 | cut -c1-300
  "$PYTHON" -c "import json, sys; r = json.load(open(sys.argv[1])); print({k: r[k] for k in ('status', 'flags')}, r['metrics'], r['device'].get('peak_tflops'))" \
    "$OUT_DIR/ds1-convolution.json"
}
[ -n "${SKIP_CONV:-}" ] || step ds1-convolution judge_convolution
write_record "$OUT_DIR" integrity-scenario
echo "per-judging JSONs and logs: $WORK/integrity"
