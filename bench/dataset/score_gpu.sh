#!/usr/bin/env bash
# On a GPU machine (torch only: no site, no network): every sample of an exported dataset
# judged by `profiler_agent bench`, the whole result written to $OUT/bench-<gpu>.json for
# `profiler_agent bench-upload` on a machine that reaches the site (docs/dataset.md, "Benchmarking GPUs offline").
#   bash bench/dataset/score_gpu.sh [DATASET] [bench options...]   (DATASET: the exported folder or .tar.gz;
#        default bench/results/dataset/gpucodeforces-DS1.tar.gz)
#   OUT=folder (default /tmp/dataset-out)   GPU=label of the files (default from nvidia-smi: h100, h200...)
#   BUILD_JOBS=builds at once (default 16)  DEADLINE=seconds for the whole run (default 540)
#   DEVICE=cpu: the same flow on a machine without a GPU (tests/agent/test_dataset_gpu_script.py)
# `bench` judges one sample at a time and builds each one as its turn comes (no parallel builds of its
# own); so the builds come first, all at once (a judging cut short after its build, as in
# backward_gpu.sh), into the build cache `bench` then reads: it judges warm. Judgings are never side by
# side: two on one GPU disturb each other's timing. Past DEADLINE, `bench` is interrupted; its state
# file ($OUT/bench-<gpu>.json.state.jsonl) keeps every sample judged, the JSON is written incomplete,
# and `bash bench/dataset/score_gpu.sh DATASET --state THAT_FILE` goes on where it stopped.
set -u
PYTHON=${PYTHON:-python}  # the interpreter with torch (a venv's, say)
cd "$(dirname "$0")/../.."
START=$SECONDS
DATASET=bench/results/dataset/gpucodeforces-DS1.tar.gz
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then DATASET=$1; shift; fi
OUT=${OUT:-/tmp/dataset-out}
CACHE=${CACHE:-bench/.cache/dataset}
DEADLINE=${DEADLINE:-540}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT/builds"
: > "$OUT/gpu.txt"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
  GPU=${GPU:-$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | tr 'A-Z' 'a-z' \
    | grep -oE '\b[a-z][0-9]{2,4}[a-z]?\b' | head -1)}
fi
GPU=${GPU:-$DEVICE}
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"

SAMPLES=$DATASET
if [ -f "$DATASET" ]; then  # an archive: extracted once here for the builds (bench checks and extracts it itself)
  SAMPLES="$OUT/extracted"
  mkdir -p "$SAMPLES" && tar -xzf "$DATASET" -C "$SAMPLES" && SAMPLES=$(ls -d "$SAMPLES"/*/ | head -1)
fi
echo "builds: $(ls "$SAMPLES/samples" | wc -l) samples, ${BUILD_JOBS:-16} at once"
ls "$SAMPLES/samples" | xargs -P "${BUILD_JOBS:-16}" -I{} sh -c \
  "'$PYTHON' -m profiler_agent judge '$SAMPLES/samples/{}' --device $DEVICE --cache-dir '$CACHE' --run-timeout 1 \
     --json '$OUT/builds/{}.json' > '$OUT/builds/{}.log' 2>&1"
"$PYTHON" - "$OUT/builds" <<'PY'
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    compile_s = (r.get("durations_s") or {}).get("compile")
    print(f"  {path.stem}: build {r['status']}"
          + (f" {compile_s:.1f} s" if isinstance(compile_s, (int, float)) else "")
          + (f" ({r['reason'][:120]})" if r["status"] == "compile_error" else ""))
PY
echo "builds done in $((SECONDS - START)) s"

LEFT=$((DEADLINE - (SECONDS - START)))
[ "$LEFT" -gt 5 ] || LEFT=5
RESULT="$OUT/bench-$GPU.json"
timeout --signal=INT --kill-after=30 "$LEFT" "$PYTHON" -m profiler_agent bench "$DATASET" --device "$DEVICE" \
  --cache-dir "$CACHE" --keep-warm --json "$RESULT" "$@" 2> >(tee "$OUT/bench-$GPU.log" >&2) | tee "$OUT/bench-$GPU.txt"
STATUS=${PIPESTATUS[0]}
if [ "$STATUS" -eq 130 ] || [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; then
  echo "bench stopped ($STATUS) at the deadline: the table and an incomplete JSON from the state file" >&2
  "$PYTHON" -m profiler_agent bench "$DATASET" --device "$DEVICE" --cache-dir "$CACHE" --json "$RESULT" --limit 0 "$@" \
    | tee "$OUT/bench-$GPU.txt"
fi
echo "total $((SECONDS - START)) s; result: $RESULT (bench exit $STATUS)"
