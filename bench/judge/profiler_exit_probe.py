"""Where a confirmation's profiler spends its time after the profiled process's last call: from the
process's last line (it leaves by os._exit, as profiler_agent.graders.profiled_target does) to the
process being gone, and to ncu's exit; for a few pure-torch calls (no build needed), with and without
ncu and with a few of ncu's options changed. The judging-cost bench shows the confirmation's profiler
taking 0.5 to 2.8 s after its process's "all done".

    python bench/judge/profiler_exit_probe.py [--rounds 2] [--out FILE]   (a CUDA host with ncu on PATH)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = """
import os, sys, time, torch
kind, calls, refs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.cuda.set_device(0)
flush_buffer = torch.zeros(50 * 2**20 // 4, dtype=torch.int32, device="cuda")
if kind == "elementwise":
    make = lambda: (torch.randn(1 << 20, device="cuda"),)
    model = lambda x: x * 1.0001
elif kind == "matmul":
    layer = torch.nn.Linear(4096, 4096, device="cuda")
    make = lambda: (torch.randn(2048, 4096, device="cuda"),)
    model = lambda x: torch.nn.functional.gelu(layer(x))
else:  # copies: 64 MB in, 64 MB out
    make = lambda: (torch.randn(1 << 24, device="cuda"),)
    model = lambda x: x.clone().add_(1)
with torch.no_grad():
    model(*make())
    torch.cuda.synchronize()
    for rng, count in (("candidate", calls), ("reference", refs)):
        for call in range(count):
            inputs = make()
            flush_buffer.max()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(f"profiler_agent call {call}")
            torch.cuda.nvtx.range_push(rng)
            if rng == "reference":
                torch.cuda.nvtx.range_push("candidate")
            model(*inputs)
            torch.cuda.synchronize()
            if rng == "reference":
                torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()
print(f"DONE {time.time():.6f}", file=sys.stderr, flush=True)
sys.stdout.flush()
os._exit(0)
"""

BASE = ["--clock-control", "none", "--cache-control", "none", "--target-processes", "application-only", "--csv",
        "--metrics", "gpu__time_duration.sum", "--nvtx", "--nvtx-include", "candidate/", "--launch-count", "401"]
VARIANTS = {
    "no ncu": None,
    "ncu as confirmed": BASE,
    "ncu, launch count exact": [a if a != "401" else "LAUNCHES" for a in BASE],
    "ncu, no nvtx filter": [a for a in BASE if a not in ("--nvtx", "--nvtx-include", "candidate/")],
    "ncu, print none": BASE + ["--print-summary", "none"],
}


def children_of(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found += [int(p) for p in text.split()]
    except OSError:
        pass
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def one(ncu: str, variant: list[str] | None, kind: str, calls: int, refs: int, folder: Path) -> dict:
    target = [sys.executable, "-c", TARGET, kind, str(calls), str(refs)]
    log = folder / "ncu.csv"
    launches = str(calls * (2 if kind == "matmul" else 1) + refs * (2 if kind == "matmul" else 1))
    command = target if variant is None else [ncu, "--log-file", str(log),
                                              *[launches if a == "LAUNCHES" else a for a in variant], *target]
    errors = folder / "stderr.txt"
    started = time.time()
    with errors.open("w") as sink:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink)
        app, gone = None if variant is not None else proc.pid, None
        while proc.poll() is None:
            if app is None:
                pythons = [p for p in children_of(proc.pid)]
                app = pythons[0] if pythons else None
            elif gone is None and variant is not None and not alive(app):
                gone = time.time()
            time.sleep(0.002)
        ended = time.time()
    text = errors.read_text()
    done = next((float(line.split()[1]) for line in text.splitlines() if line.startswith("DONE ")), None)
    if done is None:
        raise RuntimeError(f"no DONE line: {text[-2000:]}")
    kernels = log.read_text().count("gpu__time_duration") if variant is not None and log.exists() else None
    return {"whole_s": ended - started, "done_to_gone_s": (gone or ended) - done, "done_to_exit_s": ended - done,
            "kernels": kernels}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    ncu = shutil.which("ncu")
    if ncu is None:
        sys.exit("ncu is not on PATH")
    record = []
    with tempfile.TemporaryDirectory() as folder:
        for kind, calls, refs in (("elementwise", 9, 9), ("matmul", 3, 3), ("copies", 3, 3), ("matmul", 9, 0)):
            for name, variant in VARIANTS.items():
                rows = [one(ncu, variant, kind, calls, refs, Path(folder)) for _ in range(args.rounds)]
                row = {"target": kind, "calls": calls, "reference_calls": refs, "variant": name,
                       **{key: statistics.median(r[key] for r in rows) for key in ("whole_s", "done_to_gone_s", "done_to_exit_s")},
                       "kernels": [r["kernels"] for r in rows]}
                record.append(row)
                print(f"{kind:11} {calls}+{refs} {name:26} whole {row['whole_s']:.2f} s, last line to process gone "
                      f"{row['done_to_gone_s']:.2f} s, to exit {row['done_to_exit_s']:.2f} s, kernels {row['kernels']}",
                      flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
