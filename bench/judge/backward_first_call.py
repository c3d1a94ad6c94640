"""The first forward-and-backward calls of a backward example's reference in a fresh process on the
GPU, with or without `torch.fx.experimental.symbolic_shapes` imported first: torch.autograd.grad
imports it (and sympy) at its first call with a gradient given, which a CPU host measures at 0.9 s of
the example's first call.

    python bench/judge/backward_first_call.py no|pre ce-fused-backward|attention-backward
"""
import sys, time
from pathlib import Path
t0 = time.perf_counter()
import torch
torch.empty(1, device="cuda"); torch.cuda.synchronize()
t1 = time.perf_counter()
if sys.argv[1] == "pre":
    import torch.fx.experimental.symbolic_shapes  # noqa
t2 = time.perf_counter()
sys.path.insert(0, ".")
from profiler_agent.bundles import module_loading
from profiler_agent.trials.input_draws import make_inputs
ex = sys.argv[2]
api = module_loading.reference_api(Path(f"examples/{ex}/torchcode.py"), None)
m = module_loading.build_model(api.Model, api.get_init_inputs, 1, torch.device("cuda"), api.backward)
out = []
for i in range(3):
    x = make_inputs(api.get_inputs, 5 + i, "cuda")
    torch.cuda.synchronize(); t = time.perf_counter(); m(*x); torch.cuda.synchronize(); out.append(round(time.perf_counter() - t, 3))
print(ex, sys.argv[1], f"torch+ctx {t1-t0:.2f} preimport {t2-t1:.2f} calls {out}", flush=True)
