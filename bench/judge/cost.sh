#!/usr/bin/env bash
# What a judging costs on one GPU, as an agent judging job after job pays it (bench/judge/judging_cost.py).
# Parts (PART=warm by default):
# - warm: every bundle built first, then each judged warm (the pool's processes started before the job),
#   GAP seconds apart (default 5; 0: a full queue): the median wall time and the cost per stage. BUNDLES
#   (default: the adversarial, launch-bound, dispatch and graph bundles, examples/001-example and the two
#   forward-and-backward examples; the dataset's
#   ds-* samples, with inputs of 134-537 MB, do not fit the call beside them) is a list of folders;
# - cold: the agent's precompiled headers prepared, then the cold compile as a judging whose processes wait
#   sees it (--cold), and the cold compile of examples/001-example as a judged process builds it
#   (bench/build/cold_compile.py --only judged: "compile s" is what a judging reports).
# Writes RESULTS/judging-cost/: warm.log, cold.log, gpu.txt, the scenario's record (judging-cost.json);
# RESULTS/cold-compile/judged.log.
#   bash bench/judge/cost.sh                     (~7 min on an H100; RESULTS=$OUT on a device machine)
#   PART="warm cold" GAP=0 bash bench/judge/cost.sh
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for judging-cost)
gpu_facts "$OUT_DIR"
CACHE=bench/.cache/cost  # git-ignored; kept between calls on a device machine

warm() {
  local bundles=() folder
  for folder in ${BUNDLES:-bench/fixtures/bundles/adv-* bench/fixtures/bundles/dispatch-cpu bench/fixtures/bundles/lb-* bench/fixtures/bundles/graph-static-copies examples/001-example examples/attention-backward examples/ce-fused-backward}; do
    bundles+=(--bundle "$folder")
  done
  timeout "${WARM_TIMEOUT:-400}" "$PYTHON" bench/judge/judging_cost.py --cache-dir "$CACHE" --gap "${GAP:-5}" "${bundles[@]}" 2>&1
}

cold() {
  # the flags the cold bundles build with (none): torch's header and main.cpp's lean one
  "$PYTHON" -m profiler_agent prepare-pch --device cuda --cache-dir "$CACHE" --cflags "" 2>&1 | tail -5
  "$PYTHON" bench/judge/judging_cost.py --cache-dir "$CACHE" --gap 3 --bundle bench/fixtures/bundles/lb-mlp-gelu \
    --cold examples/001-example --cold bench/fixtures/bundles/lb-matmul-relu --cold bench/fixtures/bundles/lb-add-layernorm 2>&1
  timeout 170 "$PYTHON" bench/build/cold_compile.py --only judged --pch-root "$CACHE/pch" 2>&1 | tail -8 \
    | tee "$(results_for cold-compile)/judged.log"
}

for part in ${PART:-warm}; do
  case $part in
    warm) step warm warm > >(tee "$OUT_DIR/warm.log") 2>&1 ;;
    cold) step cold cold > >(tee "$OUT_DIR/cold.log") 2>&1 ;;
    *) echo "unknown part $part (warm, cold)" >&2; exit 2 ;;
  esac
done
write_record "$OUT_DIR" judging-cost
