"""Self-test: checks the C++ version against the PyTorch one and prints the speedup (CPU)."""
import time

import torch

from cudacode import ModelNew
from torchcode import Model, get_init_inputs, get_inputs


def median_ms(model, inputs, warmup=3, runs=20):
    for _ in range(warmup):
        model(*inputs)
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        model(*inputs)
        times.append((time.perf_counter_ns() - start) / 1e6)
    times.sort()
    return times[len(times) // 2]


def main():
    torch.manual_seed(0)
    reference = Model(*get_init_inputs())
    candidate = ModelNew(*get_init_inputs())
    inputs = get_inputs()
    with torch.no_grad():
        ok = torch.allclose(reference(*inputs), candidate(*inputs), atol=1e-4, rtol=1e-4)
        print(f"correct: {ok}")
        torch_ms = median_ms(reference, inputs)
        cpp_ms = median_ms(candidate, inputs)
    print(f"torch:   {torch_ms:.3f} ms")
    print(f"c++:     {cpp_ms:.3f} ms")
    print(f"speedup: {torch_ms / cpp_ms:.2f}x")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
