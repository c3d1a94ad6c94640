#!/usr/bin/env bash
# Session 13 on a GPU: energy per call from counter steps placed precisely enough
# (measure/telemetry.ENERGY_PRECISION). How long NVML's reading takes and how the figures spread
# (bench/energy_window.py; "median of N" says how many of 6 tries gave a figure), the telemetry and
# timing GPU tests, then one honest
# bundle, whose results must carry an energy figure.
#   OUT=/tmp/s13 bash bench/session13_gpu.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-/tmp/session13-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
python bench/energy_window.py 2>&1 | tee "$OUT/energy-window.log"
python -m pytest -q -p no:cacheprovider tests/agent/test_telemetry.py tests/agent/test_timing_gpu.py 2>&1 | tail -4 \
  | tee "$OUT/gpu-tests.log"
python bench/integrity_gpu.py --out /tmp/s13-integrity --deadline 150 --no-truth --only lb-add-layernorm 2>&1 \
  | tee "$OUT/integrity.log" | grep -E 'median|OK|UNEXPECTED' | cut -c1-200 | tail -12
cp /tmp/s13-integrity/integrity.json "$OUT/" 2>/dev/null
python - <<'PY' | tee "$OUT/energy-in-results.log"
import json, pathlib
for path in sorted(pathlib.Path("/tmp/s13-integrity").glob("*.json")):
    if path.name != "integrity.json":
        result = json.loads(path.read_text())
        print(path.stem, result.get("status"), "energy_j_per_call:", (result.get("telemetry") or {}).get("energy_j_per_call"))
PY
