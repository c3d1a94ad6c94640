#!/usr/bin/env bash
# Energy per call on one GPU (measure/telemetry): how often the GPU's energy counter steps and how far
# joules-per-call figures spread over repeats (bench/judge/energy_window.py; "median of N" says how many
# of 6 tries gave a figure), the telemetry and timing tests, then one honest bundle judged through the
# integrity bench, whose result must carry an energy figure.
# Writes RESULTS/energy/: energy-window.log, gpu-tests.log, integrity.json and .log, energy-in-results.log,
# gpu.txt, the scenario's record (energy.json).
#   bash bench/judge/energy.sh                   (~4 min on an H100; RESULTS=$OUT on a device machine)
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for energy)
gpu_facts "$OUT_DIR"

energy_tests() {
  "$PYTHON" -m pytest -q -p no:cacheprovider tests/agent/test_telemetry.py tests/agent/test_timing_gpu.py 2>&1 | tail -4
}

honest_bundle() {
  "$PYTHON" bench/judge/integrity.py --out "$WORK/integrity" --deadline 150 --no-truth --only lb-add-layernorm 2>&1 \
    | grep -E 'median|OK|UNEXPECTED' | cut -c1-200 | tail -12
  cp "$WORK/integrity/integrity.json" "$OUT_DIR/"
}

energy_in_results() {
  "$PYTHON" - "$WORK/integrity" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    if path.name != "integrity.json":
        result = json.loads(path.read_text())
        print(path.stem, result.get("status"), "energy_j_per_call:", (result.get("telemetry") or {}).get("energy_j_per_call"))
PY
}

step energy-window "$PYTHON" bench/judge/energy_window.py > >(tee "$OUT_DIR/energy-window.log") 2>&1
step tests energy_tests > >(tee "$OUT_DIR/gpu-tests.log") 2>&1
step honest-bundle honest_bundle > >(tee "$OUT_DIR/integrity.log") 2>&1
step energy-in-results energy_in_results > >(tee "$OUT_DIR/energy-in-results.log") 2>&1
write_record "$OUT_DIR" energy
