"""What the first draw of inputs on the GPU costs in a fresh process, by the way it is made: plainly,
under torch's default-device context, with deterministic algorithms on, both, a uniform fill, and a
CPU draw moved over (profiler_agent.trials.input_draws: deterministic algorithms cost 4-6 s there).

    for mode in plain ctx det both uniform cpu; do python bench/judge/first_draw_probe.py $mode; done
"""
import sys, time
t0 = time.perf_counter()
import torch
mode = sys.argv[1]
torch.empty(1, device="cuda"); torch.cuda.synchronize()
t1 = time.perf_counter()
torch.manual_seed(3)
if mode == "plain":
    x = torch.randn(1 << 24, device="cuda")
elif mode == "ctx":
    with torch.device("cuda"):
        x = torch.randn(1 << 24)
elif mode == "det":
    torch.use_deterministic_algorithms(True)
    x = torch.randn(1 << 24, device="cuda")
elif mode == "both":
    torch.use_deterministic_algorithms(True)
    with torch.device("cuda"):
        x = torch.randn(1 << 24)
elif mode == "uniform":
    x = torch.empty(1 << 24, device="cuda").uniform_()
elif mode == "cpu":
    x = torch.randn(1 << 24).cuda()
torch.cuda.synchronize()
t2 = time.perf_counter()
if mode in ("ctx", "both"):
    with torch.device("cuda"):
        y = torch.randn(1 << 24)
else:
    y = torch.randn(1 << 24, device="cuda")
torch.cuda.synchronize()
t3 = time.perf_counter()
print(f"{mode}: import+ctx {t1-t0:.2f}, first draw {t2-t1:.3f}, second {t3-t2:.4f}", flush=True)
