#!/usr/bin/env bash
# Issue 11 item 5 on a GPU: the forward-and-backward example bundles judged by the CLI (built at once,
# judged one at a time: judgings side by side on one GPU disturb each other's timing), then one line each: status, reason, speedup, flags, the timing confirmation.
#   bash bench/judge/backward.sh        (OUT=folder for the JSON results)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/backward-out}
mkdir -p "$OUT"
EXAMPLES="ce-fused-backward ce-fused-backward-wrong attention-backward"
for example in $EXAMPLES; do  # the builds at once (a judging cut short after its build), then one at a time
  python -m profiler_agent judge "examples/$example" --device cuda --cache-dir bench/.cache/backward \
    --run-timeout 1 > /dev/null 2>&1 &
done
wait
for example in $EXAMPLES; do
  python -m profiler_agent judge "examples/$example" --device cuda --cache-dir bench/.cache/backward \
    --json "$OUT/$example.json" > "$OUT/$example.log" 2>&1
done
python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    t, c = r["timing"], (r["timing"].get("confirmation") or {})
    print(f"{path.stem}: {r['status']} reason={r['reason']!r} speedup={t['speedup']} "
          f"ref={t['reference']['median_ms']} cand={t['candidate']['median_ms']} flags={r['flags']} "
          f"confirmed={c.get('confirmed')} ratio={c.get('ratio')} trials={r['correctness']['trials']} "
          f"durations={ {k: round(v, 1) for k, v in r['durations_s'].items() if isinstance(v, (int, float))} }")
PY
