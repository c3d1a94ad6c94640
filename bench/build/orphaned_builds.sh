#!/usr/bin/env bash
# The build cache's next holder ends the builders a killed agent left running
# (profiler_agent/executors/orphaned_builds.py), on a GPU host: an agent judging examples/001-example on CUDA
# is killed with -9 mid-build (a fresh cache, the kernel's source changed by a comment, so nvcc runs); the
# builders left are counted; the same bundle is judged again in that cache: it must pass with no builder
# left and a valid ninja deps log. Then the sandbox's and the builds' tests.
# Writes RESULTS/orphaned-builds/: orphans.log, orphan-rejudge.json, gpu-tests.log, gpu.txt, the scenario's
# record (orphaned-builds.json).
#   bash bench/build/orphaned_builds.sh          (~4 min on an H100; RESULTS=$OUT on a device machine)
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for orphaned-builds)
gpu_facts "$OUT_DIR"
builders() { ps -eo pid,ppid,etimes,args | grep -E 'ninja|nvcc|cicc|ptxas|cc1plus|cudafe' | grep -v grep; }

kill_mid_build() {
  local bundle="$WORK/orphan-example" cache="$WORK/cache" judge started folder status
  cp -r examples/001-example "$bundle"
  sed -i '0,/__global__/s//\/\/ a fresh build\n__global__/' "$bundle/example_cudacode.py"
  "$PYTHON" -m profiler_agent judge "$bundle" --device cuda --cache-dir "$cache" > "$WORK/killed-judge.log" 2>&1 &
  judge=$!
  sleep "${KILL_AFTER_S:-9}"
  echo "builders while judging:"; builders
  kill -9 "$judge"; sleep 1
  echo "left running after kill -9 of the agent ($(builders | wc -l)):"; builders
  started=$(date +%s.%N)
  "$PYTHON" -m profiler_agent judge "$bundle" --device cuda --cache-dir "$cache" --json "$OUT_DIR/orphan-rejudge.json" \
    > "$WORK/rejudge.log" 2>&1
  status=$?
  echo "second judging: exit $status, $("$PYTHON" -c "import sys; print(round($(date +%s.%N) - $started, 1))") s"
  "$PYTHON" -c "import json, sys; r = json.load(open(sys.argv[1])); print(r['status'], r['reason'], r['durations_s'])" \
    "$OUT_DIR/orphan-rejudge.json"
  echo "left running after it ($(builders | wc -l))"
  for folder in "$cache"/*/*/; do
    [ -f "$folder/build.ninja" ] && (cd "$folder" && echo "$folder" && ninja -t deps | head -1 && ninja -n | tail -1)
  done
  return "$status"
}

build_tests() {
  "$PYTHON" -m pytest -q -p no:cacheprovider tests/agent/test_sandbox.py tests/agent/test_builds.py 2>&1 | tail -6
}

step kill-mid-build kill_mid_build > >(tee "$OUT_DIR/orphans.log") 2>&1
step tests build_tests > >(tee "$OUT_DIR/gpu-tests.log") 2>&1
write_record "$OUT_DIR" orphaned-builds
