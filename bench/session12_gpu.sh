#!/usr/bin/env bash
# Session 12 on the H100: the build cache's next holder ends the builders a killed agent left running
# (profiler_agent/bundles/orphaned_builds.py). An agent judging examples/001-example on CUDA is killed
# with -9 mid-build (a fresh cache, the kernel's source changed by a comment, so nvcc runs); the orphans
# are counted; the same bundle is judged again in that cache: it must pass with no orphan left and a
# valid ninja deps log. Then the GPU tests of the sandbox, builds and census, and the integrity bench.
#   OUT=/tmp/s12 bash bench/session12_gpu.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-/tmp/session12-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
builders() { ps -eo pid,ppid,etimes,args | grep -E 'ninja|nvcc|cicc|ptxas|cc1plus|cudafe' | grep -v grep; }
BUNDLE=$(mktemp -d)/orphan-example CACHE=$(mktemp -d)
cp -r examples/001-example "$BUNDLE"
sed -i '0,/__global__/s//\/\/ session 12: a fresh build\n__global__/' "$BUNDLE/example_cudacode.py"
{
  python -m profiler_agent judge "$BUNDLE" --device cuda --cache-dir "$CACHE" > "$OUT/killed-judge.log" 2>&1 &
  judge=$!
  sleep 9
  echo "builders while judging:"; builders
  kill -9 "$judge"; sleep 1
  echo "left running after kill -9 of the agent ($(builders | wc -l)):"; builders
  started=$(date +%s.%N)
  python -m profiler_agent judge "$BUNDLE" --device cuda --cache-dir "$CACHE" --json "$OUT/orphan-rejudge.json" \
    > "$OUT/rejudge.log" 2>&1
  echo "second judging: exit $?, $(python -c "print(round($(date +%s.%N) - $started, 1))") s"
  python -c "import json; r=json.load(open('$OUT/orphan-rejudge.json')); print(r['status'], r['reason'], r['durations_s'])"
  echo "left running after it ($(builders | wc -l))"
  for folder in "$CACHE"/*/*/; do [ -f "$folder/build.ninja" ] && (cd "$folder" && echo "$folder" && ninja -t deps | head -1 && ninja -n | tail -1); done
} 2>&1 | tee "$OUT/orphans.log"
python -m pytest -q -p no:cacheprovider tests/agent/test_sandbox.py tests/agent/test_builds.py tests/agent/test_kernel_census.py \
  tests/agent/test_slots_gpu.py tests/agent/test_timing_gpu.py 2>&1 | tail -6 | tee "$OUT/gpu-tests.log"
# its folder of logs stays on the machine (at most 8 files come back): the table and integrity.json do
python bench/integrity_gpu.py --out /tmp/s12-integrity --deadline 300 2>&1 | tee "$OUT/integrity.log" \
  | grep -E 'median|OK|UNEXPECTED' | cut -c1-200 | tail -20
cp /tmp/s12-integrity/integrity.json "$OUT/" 2>/dev/null
