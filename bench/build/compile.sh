#!/usr/bin/env bash
# Where a load_inline bundle's cold build spends its time on a GPU host. Parts (PART="stages front cold"):
# - stages: nvcc's sub-steps with and without `--threads 2` (do its host and device front ends overlap?),
#   bench/build/nvcc_stages.py --only narrow+context,narrow+context-threads2;
# - front: plain nvcc against the agent's parallel front on examples/001-example's .cu, 3 rounds each
#   (bench/build/nvcc_parallel.py);
# - cold: the cold compile as a judged process builds it, through the front and through plain nvcc
#   (bench/build/cold_compile.py --only judged,judged-plain-nvcc).
# Writes RESULTS/nvcc-stages/threads2.log, RESULTS/nvcc-parallel/<gpu>.log,
# RESULTS/cold-compile/judged-vs-plain-nvcc.log, and the scenario's record RESULTS/cold-compile/compile.json.
#   bash bench/build/compile.sh                  (~8 min on an H100; RESULTS=$OUT on a device machine)
source "$(dirname "$0")/../gpu_scenario.sh"
OUT_DIR=$(results_for cold-compile)
gpu_facts "$OUT_DIR"

for part in ${PART:-stages front cold}; do
  case $part in
    stages) step stages "$PYTHON" bench/build/nvcc_stages.py --only narrow+context,narrow+context-threads2 \
              > >(tee "$(results_for nvcc-stages)/threads2.log" | cut -c1-300) 2>&1 ;;
    front) step front "$PYTHON" bench/build/nvcc_parallel.py --repeat 3 \
             > >(tee "$(results_for nvcc-parallel)/$(gpu_label).log" | tail -12) 2>&1 ;;
    cold) step cold "$PYTHON" bench/build/cold_compile.py --only judged,judged-plain-nvcc \
            > >(tee "$OUT_DIR/judged-vs-plain-nvcc.log" | tail -8) 2>&1 ;;
    *) echo "unknown part $part (stages, front, cold)" >&2; exit 2 ;;
  esac
done
write_record "$OUT_DIR" compile
