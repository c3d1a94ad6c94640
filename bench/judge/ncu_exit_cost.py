"""What the end of a profiled process costs under Nsight Compute: the time from the process's last
profiled kernel to ncu's exit, when the process ends normally (Python's and CUDA's teardown) and when it
leaves by os._exit after flushing its outputs; and whether ncu's table still holds every kernel.

    python bench/judge/ncu_exit_cost.py [--rounds 3]        (on a CUDA host with ncu on PATH)
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = """
import os, sys, time, torch
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("call")
for _ in range(5):
    x = x * 1.0001
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
print(f"DONE {time.time():.6f}", file=sys.stderr, flush=True)
if sys.argv[1] == "exit":
    sys.stdout.flush()
    os._exit(0)
"""


def one(ncu: str, mode: str, folder: Path) -> tuple[float, float, int]:
    log = folder / f"{mode}.csv"
    command = [ncu, "--clock-control", "none", "--cache-control", "none", "--target-processes", "application-only",
               "--csv", "--log-file", str(log), "--metrics", "gpu__time_duration.sum", "--nvtx", "--nvtx-include", "call/",
               sys.executable, "-c", TARGET, mode]
    started = time.time()
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    ended = time.time()
    done = next(float(line.split()[1]) for line in run.stderr.splitlines() if line.startswith("DONE "))
    kernels = sum(1 for line in log.read_text().splitlines() if "gpu__time_duration" in line)
    return ended - done, ended - started, kernels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ncu = shutil.which("ncu")
    if ncu is None:
        sys.exit("ncu is not on PATH")
    record = {}
    with tempfile.TemporaryDirectory() as folder:
        for mode in ("normal", "exit"):
            rows = [one(ncu, mode, Path(folder)) for _ in range(args.rounds)]
            record[mode] = {"after_last_kernel_s": statistics.median(r[0] for r in rows),
                            "whole_s": statistics.median(r[1] for r in rows),
                            "kernels_recorded": [r[2] for r in rows]}
            print(f"{mode}: after the last kernel {record[mode]['after_last_kernel_s']:.2f} s, whole run "
                  f"{record[mode]['whole_s']:.2f} s, kernels in ncu's table {record[mode]['kernels_recorded']}", flush=True)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
