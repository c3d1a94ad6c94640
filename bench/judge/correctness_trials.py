"""Correctness trials on a GPU: candidates a cache could pass, stateful models, reasons.

    python bench/judge/correctness_trials.py [--device cuda] [--only NAME ...] [--json FILE]

Judges each bundle below with `python -m profiler_agent judge` and prints one row per bundle:
the status and reason it got against the one it should get. On main the CUDA-graph replay and the
address memo passed on an H100 (the caching allocator gave every trial the same addresses) and the
stateful port was rejected. Pure-Python candidates: no compile, about a minute in all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

RELU = """
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4096, 1024)]
def get_init_inputs():
    return []
"""

STATEFUL = """
import torch, torch.nn as nn
batch, hidden = 64, 128
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n, n) / n**0.5)
        self.U = nn.Parameter(torch.randn(n, n) / n**0.5)
        self.register_buffer("h", torch.zeros(batch, n))
    def forward(self, x):
        self.h.copy_(torch.tanh(x @ self.W + self.h @ self.U))
        return self.h
def get_inputs():
    return [torch.randn(batch, hidden)]
def get_init_inputs():
    return [hidden]
"""

CANDIDATES = {
    # name: (reference, candidate, expected status, expected start of the reason)
    "honest-relu": (RELU, """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
""", "passed", None),
    # captures a CUDA graph on its first call's input address and replays it ever after
    "cuda-graph-replay": (RELU, """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        if not hasattr(self, "graph"):
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(x)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = torch.relu(x)
        self.graph.replay()
        return self.out
""", "wrong_answer", "trial 1:"),
    "data-ptr-memo": (RELU, """
import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}
    def forward(self, x):
        if x.data_ptr() not in self.memo:
            self.memo[x.data_ptr()] = torch.relu(x)
        return self.memo[x.data_ptr()]
""", "wrong_answer", "repeat of trial 0"),
    "stateful-port": (STATEFUL, """
import torch, torch.nn as nn
batch = 64
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n, n) / n**0.5)
        self.U = nn.Parameter(torch.randn(n, n) / n**0.5)
        self.register_buffer("h", torch.zeros(batch, n))
    def forward(self, x):
        self.h.copy_(torch.tanh(torch.addmm(x @ self.W, self.h, self.U)))
        return self.h
""", "passed", None),
    "stateful-forgetful": (STATEFUL, """
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n, n) / n**0.5)
        self.U = nn.Parameter(torch.randn(n, n) / n**0.5)
    def forward(self, x):
        return torch.tanh(x @ self.W)
""", "wrong_answer", "trial 1:"),
    "os-exit-in-forward": (RELU, """
import os, torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        os._exit(0)
""", "runtime_error", "the judged process ended (exit code 0)"),
}


def judge(folder: Path, device: str) -> dict:
    out = folder / "result.json"
    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "judge", str(folder), "--device", device,
         "--timing-budget", "0.5", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    if not out.exists():
        return {"status": "no result", "reason": completed.stderr.strip().splitlines()[-1:], "flags": []}
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--only", nargs="*", default=(), help=f"bundle names: {', '.join(CANDIDATES)}")
    parser.add_argument("--json", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "correctness-trials" / "trials.json",
                        help="every row, as JSON (default %(default)s)")
    args = parser.parse_args()
    rows, failures = [], 0
    with tempfile.TemporaryDirectory(prefix="trials-gpu-") as tmp:
        for name, (reference, candidate, want_status, want_reason) in CANDIDATES.items():
            if args.only and name not in args.only:
                continue
            folder = Path(tmp) / name
            folder.mkdir()
            (folder / "torchcode.py").write_text(textwrap.dedent(reference))
            (folder / "cudacode.py").write_text(textwrap.dedent(candidate))
            result = judge(folder, args.device)
            reason = result.get("reason")
            ok = result["status"] == want_status and (
                reason is None if want_reason is None else str(reason).startswith(want_reason))
            failures += not ok
            rows.append({"bundle": name, "ok": ok, "status": result["status"], "expected": want_status,
                         "trials": (result.get("correctness") or {}).get("trials"), "flags": result.get("flags"),
                         "reason": reason})
            print(f"{'OK ' if ok else 'BAD'} {name:<20} {result['status']:<14} (want {want_status:<13}) "
                  f"trials {rows[-1]['trials']}  flags {result.get('flags')}  reason: {reason}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    print(f"{len(rows) - failures}/{len(rows)} as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
