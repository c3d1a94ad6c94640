"""What `ncu` profiles for bench/judge/harness.py: each bundle's candidate, 1 warm-up and 3 launches,
in the order given (the bench maps ncu's launches back to bundles by that order)."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from profiler_agent.bundles.module_loading import import_file  # noqa: E402

for folder in map(Path, sys.argv[1:]):
    reference = import_file(folder / "torchcode.py", "ref")
    sys.path.insert(0, str(folder))
    model = import_file(folder / "cudacode.py", "cand").ModelNew().cuda()
    sys.path.remove(str(folder))
    torch.manual_seed(0)
    inputs = [t.cuda() for t in reference.get_inputs()]
    with torch.no_grad():
        for _ in range(4):
            model(*inputs)
        torch.cuda.synchronize()
