#!/usr/bin/env bash
# Profile reports on a GPU (the site's `profile` mode: python -m profiler_agent judge --mode profile): each bundle of
# BUNDLES (default examples/001-example, one kernel of its own, and bench/fixtures/bundles/lb-mlp-gelu, a GEMM, a
# custom kernel and a GEMM a call) is judged three times with one build cache: in test mode cold (its build), in test
# mode warm (the baseline: the same trials, no profile), in profile mode warm. What the profile costs is the last
# wall time less the baseline's. bench/judge/profile_check.py then reads ncu's own table again with the agent's
# parser, reads the .ncu-rep back with `ncu --import` (details and raw pages), and writes the bundle's record.
# Needs torch and the agent alone (no Django, rq, redis or pytest).
# Writes RESULTS/profile/: per bundle <name>.result.json (the judging's JSON, its report in `profile`),
# <name>.ncu-rep, <name>.ncu-details.csv (ncu's table as the report was read from it), <name>.import-details.csv and
# <name>.import-raw.csv (the .ncu-rep read back), <name>.log (the three judgings' output), <name>.json (the record:
# times, kernels, checks); gpu.txt, ncu.txt (its path and version); profile-report.json (the scenario's record).
#   bash bench/judge/profile_report.sh                       (RESULTS=$OUT on a device machine)
#   BUNDLES="examples/001-example" bash bench/judge/profile_report.sh
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for profile)
gpu_facts "$OUT_DIR"
{ command -v ncu && ncu --version; } > "$OUT_DIR/ncu.txt" 2>&1 || echo "no ncu on PATH" >> "$OUT_DIR/ncu.txt"
CACHE=bench/.cache/profile  # git-ignored; kept between calls on a device machine
LIMIT=${JUDGE_TIMEOUT:-900}  # each judging's wall-clock limit here, over the agent's own

# judge NAME MODE FOLDER [ARGS...]: one judging's wall seconds into $WORK/NAME.MODE.s, its output into the log.
judge() {
  local name=$1 mode=$2 folder=$3 started code=0
  shift 3
  started=$EPOCHREALTIME
  timeout "$LIMIT" "$PYTHON" -m profiler_agent judge "$folder" --device cuda --cache-dir "$CACHE" \
    --mode "${mode%-*}" "$@" >> "$OUT_DIR/$name.log" 2>&1 || code=$?
  awk "BEGIN { printf \"%.2f\\n\", $EPOCHREALTIME - $started }" > "$WORK/$name.$mode.s"
  echo "== $name $mode: exit $code, $(cat "$WORK/$name.$mode.s") s" | tee -a "$OUT_DIR/$name.log"
  return "$code"
}

profile_bundle() {
  local folder=$1 name
  name=$(basename "$folder")
  : > "$OUT_DIR/$name.log"
  mkdir -p "$WORK/$name"
  judge "$name" test-cold "$folder" --json "$WORK/$name.test-cold.json" || true
  judge "$name" test-warm "$folder" --json "$WORK/$name.test-warm.json" || true
  judge "$name" profile "$folder" --json "$OUT_DIR/$name.result.json" --profile-dir "$WORK/$name" || true
  for kept in profile.ncu-rep:ncu-rep ncu-details.csv:ncu-details.csv; do
    [ -f "$WORK/$name/${kept%%:*}" ] && cp "$WORK/$name/${kept%%:*}" "$OUT_DIR/$name.${kept#*:}"
  done
  "$PYTHON" bench/judge/profile_check.py --name "$name" --folder "$OUT_DIR" \
    --test-cold-s "$(cat "$WORK/$name.test-cold.s")" --test-warm-s "$(cat "$WORK/$name.test-warm.s")" \
    --profile-s "$(cat "$WORK/$name.profile.s")"
}

for folder in ${BUNDLES:-examples/001-example bench/fixtures/bundles/lb-mlp-gelu}; do
  step "$(basename "$folder")" profile_bundle "$folder"
done
write_record "$OUT_DIR" profile-report
