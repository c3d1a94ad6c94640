"""GPU checks of the sandbox helper's work, one short table each (run on the device machine):

    python bench/judge/sandbox_checks.py                 # all checks
    python bench/judge/sandbox_checks.py --only census   # census | lazy-build | memory

- census: the kernel census counts only kernels from the bundle's own build. A torch-only candidate
  whose forward replays a CUDA graph with copies in it (the driver's memcpy32_post / memcpy128) must
  get `no_custom_kernel`; examples/001-example (a load_inline kernel) must not.
- lazy-build: examples/001-example's load_inline moved into the first forward: compile time, not run
  time (durations_s.compile holds the build; the compile log has ninja's output).
- memory: a candidate that holds 4 GiB of host memory in forward under a 2 GiB limit: memory_limit
  naming the phase, through the cgroup where one can be made, else the agent's watchdog. GPU memory
  is not resident memory: a candidate that allocates GPU memory is left to the device's own limits.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "001-example"

GRAPH_COPIES = '''
import torch, torch.nn as nn

class ModelNew(nn.Module):
    """torch's relu replayed from a CUDA graph; the input and output travel by copies captured in it."""
    def __init__(self):
        super().__init__()
        self.graph = None

    def forward(self, x):
        if self.graph is None or self.static_in.shape != x.shape:
            self.static_in = torch.empty_like(x)
            self.static_out = torch.empty_like(x)
            self.staging = torch.empty_like(x)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.static_out.copy_(torch.relu(self.static_in))
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_in.copy_(self.staging)
                self.static_out.copy_(torch.relu(self.static_in))
        self.staging.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
'''

LAZY = (EXAMPLE / "example_cudacode.py").read_text().replace(
    "# Compile the inline CUDA code\nrelu = load_inline(", "def build():\n  return load_inline(").replace(
    "        self.relu = relu\n", "        self.relu = None\n").replace(
    "        return self.relu.relu_cuda(x)", "        if self.relu is None:\n            self.relu = build()\n"
    "        return self.relu.relu_cuda(x)")

HOARD_IN_FORWARD = '''
import torch, torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        if not hasattr(self, "hoard"):
            self.hoard = torch.ones(4 * 1024**3 // 4)  # 4 GiB of host memory, every page written
        return torch.relu(x)
'''


def bundle(root: Path, name: str, candidate: str) -> Path:
    folder = root / name
    folder.mkdir()
    shutil.copy(EXAMPLE / "example_torchcode.py", folder / "torchcode.py")
    (folder / "cudacode.py").write_text(candidate)
    return folder


def judge(folder: Path, *options: str) -> dict:
    out = folder.with_suffix(".json")
    subprocess.run([sys.executable, "-m", "profiler_agent", "judge", str(folder), "--device", "cuda",
                    "--timing-budget", "1", "--json", str(out), *options], cwd=REPO, capture_output=True)
    return json.loads(out.read_text())


def census(root: Path) -> None:
    print("\n== census: only kernels from the bundle's build are custom")
    print(f"{'bundle':<14} {'status':<12} {'no_custom_kernel':<17} {'expected':<9} kernels (candidate) -> custom")
    for name, source, expect_flag in (("graph-copies", GRAPH_COPIES, True),
                                      ("load-inline", (EXAMPLE / "example_cudacode.py").read_text(), False)):
        result = judge(bundle(root, name, source))
        flagged = "no_custom_kernel" in result["flags"]
        kernels = result.get("kernels") or {}
        print(f"{name:<14} {result['status']:<12} {str(flagged):<17} {'OK' if flagged == expect_flag else 'WRONG':<9} "
              f"{[k[:40] for k in kernels.get('candidate', [])]} -> {kernels.get('custom')}")


def lazy_build(root: Path) -> None:
    print("\n== lazy-build: a load_inline in the first forward is compile time")
    result = judge(bundle(root, "lazy", LAZY))
    durations = result["durations_s"]
    logged = "a build started after the import" in result["logs"]["compile"]
    print(f"status {result['status']}; compile {durations['compile']:.1f} s, correctness "
          f"{durations['correctness']:.2f} s; announced in the compile log: {logged}; flags {result['flags']}")


def memory(root: Path) -> None:
    print("\n== memory: 4 GiB of host memory in forward under --memory-limit 2G")
    result = judge(bundle(root, "hoard", HOARD_IN_FORWARD), "--memory-limit", "2G")
    lines = [line for line in result["logs"]["stderr"].splitlines() if "memory" in line][-3:]
    print(f"status {result['status']} (expected memory_limit)")
    for line in lines:
        print("  " + line[:240])


CHECKS = {"census": census, "lazy-build": lazy_build, "memory": memory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(CHECKS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sandbox-gpu-") as tmp:
        for name, check in CHECKS.items():
            if args.only in (None, name):
                check(Path(tmp))


if __name__ == "__main__":
    main()
