#!/usr/bin/env bash
# The forward-and-backward example bundles on one GPU. Parts (PART="judge probe" by default):
# - judge: examples/ce-fused-backward, its wrong twin and attention-backward judged by the CLI (built all
#   at once first, then judged one at a time: judgings side by side on one GPU disturb each other's
#   timing), one line each: status, reason, speedup, flags, the timing confirmation;
# - probe: why honest forward+backward calls could look `timer_tampered` (bench/judge/backward_timer_probe.py,
#   40 calls: the event pair against the wall clock, the flush reads held, the host's launch time).
# Writes RESULTS/backward/: <example>.json and .log, timer-probe-<example>.log, gpu.txt, the scenario's
# record (backward.json).
#   bash bench/judge/backward.sh                 (~5 min on an H100; RESULTS=$OUT on a device machine)
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for backward)
gpu_facts "$OUT_DIR"
EXAMPLES="ce-fused-backward ce-fused-backward-wrong attention-backward"
CACHE=bench/.cache/backward  # git-ignored

judge_examples() {
  local example
  for example in $EXAMPLES; do  # the builds at once (a judging cut short after its build), then one at a time
    "$PYTHON" -m profiler_agent judge "examples/$example" --device cuda --cache-dir "$CACHE" --run-timeout 1 \
      > /dev/null 2>&1 &
  done
  wait
  for example in $EXAMPLES; do
    "$PYTHON" -m profiler_agent judge "examples/$example" --device cuda --cache-dir "$CACHE" \
      --json "$OUT_DIR/$example.json" > "$OUT_DIR/$example.log" 2>&1
  done
  "$PYTHON" - "$OUT_DIR" $EXAMPLES <<'PY'
import json, sys
from pathlib import Path
for name in sys.argv[2:]:
    path = Path(sys.argv[1]) / f"{name}.json"
    if not path.exists():
        print(f"{name}: no result")
        continue
    r = json.loads(path.read_text())
    t, c = r["timing"], (r["timing"].get("confirmation") or {})
    print(f"{name}: {r['status']} reason={r['reason']!r} speedup={t['speedup']} "
          f"ref={t['reference']['median_ms']} cand={t['candidate']['median_ms']} flags={r['flags']} "
          f"confirmed={c.get('confirmed')} ratio={c.get('ratio')} trials={r['correctness']['trials']} "
          f"durations={ {k: round(v, 1) for k, v in r['durations_s'].items() if isinstance(v, (int, float))} }")
PY
}

probe() {
  local example
  for example in ce-fused-backward attention-backward; do
    "$PYTHON" bench/judge/backward_timer_probe.py "examples/$example" 40 > "$OUT_DIR/timer-probe-$example.log" 2>&1
    head -40 "$OUT_DIR/timer-probe-$example.log"
  done
}

for part in ${PART:-judge probe}; do
  case $part in
    judge) step judge judge_examples ;;
    probe) step probe probe ;;
    *) echo "unknown part $part (judge, probe)" >&2; exit 2 ;;
  esac
done
write_record "$OUT_DIR" backward
