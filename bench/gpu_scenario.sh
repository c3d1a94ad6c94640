# Shared by the GPU scenarios (bench/judge/*.sh, bench/build/*.sh); sourced, never run.
# RESULTS: where each scenario writes its small files, under RESULTS/<what>/ (default bench/results; on a
# device machine, $OUT). WORK: scratch for what is bulky (per-judging JSONs and logs, extracted datasets).
# A scenario's record, RESULTS/<what>/<scenario>.json: the command, the GPU, each step's exit status and seconds.
# shellcheck shell=bash
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # the benches import profiler_agent
PYTHON=${PYTHON:-python}
RESULTS=${RESULTS:-bench/results}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/bench-work-XXXXXX")}
SCENARIO_STEPS=()
SCENARIO_STARTED=$SECONDS

# Where a <what>'s files go, made if need be; prints the folder.
results_for() { mkdir -p "$RESULTS/$1" && echo "$RESULTS/$1"; }

# The GPU, its driver and clocks, into FOLDER/gpu.txt (and on the console).
gpu_facts() {
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$1/gpu.txt"
  else
    echo "no nvidia-smi" | tee "$1/gpu.txt"
  fi
}

# The GPU's short name (h100, h200...), for file names; "cpu" without one.
gpu_label() {
  nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | tr 'A-Z' 'a-z' \
    | grep -oE '\b[a-z][0-9]{2,4}[a-z]?\b' | head -1 | grep . || echo cpu
}

# step NAME COMMAND...: runs it, remembers its exit status and seconds for the record; never stops the scenario.
step() {
  local name=$1 started=$SECONDS status=0
  shift
  echo "== $name"
  "$@" || status=$?
  SCENARIO_STEPS+=("$name=$status=$((SECONDS - started))")
  return 0
}

# write_record FOLDER SCENARIO: FOLDER/SCENARIO.json from the steps run so far.
write_record() {
  "$PYTHON" - "$1/$2.json" "$2" "${PART:+PART=\"$PART\" }bash $0" "$((SECONDS - SCENARIO_STARTED))" "$(gpu_label)" \
    "${SCENARIO_STEPS[@]+"${SCENARIO_STEPS[@]}"}" <<'PY'
import json, sys
path, scenario, command, wall_s, gpu, *steps = sys.argv[1:]
rows = [dict(zip(("step", "exit_status", "seconds"), s.rsplit("=", 2))) for s in steps]
for row in rows:
    row["exit_status"], row["seconds"] = int(row["exit_status"]), int(row["seconds"])
record = {"scenario": scenario, "command": command, "gpu": gpu, "wall_s": int(wall_s), "steps": rows}
open(path, "w").write(json.dumps(record, indent=1) + "\n")
print(f"record: {path}")
PY
}
