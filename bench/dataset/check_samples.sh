#!/usr/bin/env bash
# The dataset sample bundles (bench/fixtures/bundles/ds-*) and the two forward-and-backward examples, judged on a
# GPU by the CLI: every build at once first (a judging cut short by --run-timeout 1 right after its
# build, so the build stays in the cache), then one judging at a time (judgings side by side on one GPU
# disturb each other's timing), then one line per bundle: status, flags, speedup.
#   bash bench/dataset/check_samples.sh            (OUT=folder for the JSON results and logs; DEADLINE=seconds)
# About 6-8 minutes on an H100: the builds take 1-2 minutes, each judging 15-40 s. A judging that would
# start past DEADLINE (default 450 s after the start) is skipped and said so.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ds-bundles-out}
CACHE=${CACHE:-bench/.cache/ds-bundles}  # git-ignored
DEADLINE=${DEADLINE:-450}
PYTHON=${PYTHON:-python}
mkdir -p "$OUT/logs"
BUNDLES=""
for dir in bench/fixtures/bundles/ds-*; do BUNDLES="$BUNDLES $dir"; done
BUNDLES="$BUNDLES examples/attention-backward examples/ce-fused-backward"
START=$(date +%s)

echo "building$(for b in $BUNDLES; do printf ' %s' "$(basename "$b")"; done) at once"
for bundle in $BUNDLES; do
  name=$(basename "$bundle")
  "$PYTHON" -m profiler_agent judge "$bundle" --device cuda --cache-dir "$CACHE" --run-timeout 1 \
    > "$OUT/logs/build-$name.log" 2>&1 &
done
wait
echo "built in $(( $(date +%s) - START )) s"

for bundle in $BUNDLES; do
  name=$(basename "$bundle")
  rm -f "$OUT/$name.json"
  left=$(( DEADLINE - ($(date +%s) - START) ))
  if [ "$left" -lt 40 ]; then
    echo "$name: skipped (deadline: ${DEADLINE} s)" > "$OUT/logs/$name.log"
    continue
  fi
  begun=$(date +%s)
  timeout "$left" "$PYTHON" -m profiler_agent judge "$bundle" --device cuda --cache-dir "$CACHE" \
    --json "$OUT/$name.json" > "$OUT/logs/$name.log" 2>&1
  echo "judged $name in $(( $(date +%s) - begun )) s"
done
echo "total $(( $(date +%s) - START )) s"

"$PYTHON" - "$OUT" $BUNDLES <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
for bundle in sys.argv[2:]:
    name = Path(bundle).name
    path = out / f"{name}.json"
    if not path.exists():
        log = (out / "logs" / f"{name}.log")
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        print(f"{name}: no result ({tail[0][:200] if tail else 'no log'})")
        continue
    r = json.loads(path.read_text())
    timing = r.get("timing") or {}
    ref, cand = timing.get("reference") or {}, timing.get("candidate") or {}
    corr = r.get("correctness") or {}
    speedup = timing.get("speedup")
    print(f"{name}: {r.get('status')} flags={r.get('flags')} "
          f"speedup={'-' if speedup is None else f'{speedup:.3f}x'} "
          f"ref={ref.get('median_ms')} ms cand={cand.get('median_ms')} ms "
          f"max_abs_err={corr.get('max_abs_err')} trials={corr.get('trials')}"
          + (f" reason={r.get('reason')!r}" if r.get("status") != "passed" else ""))
PY
