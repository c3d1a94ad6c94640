"""Self-test: checks the CUDA version against the PyTorch one and prints the speedup.

Run it on a GPU machine from this folder:  python run_code.py
"""
import torch

from example_cudacode import ModelNew
from example_torchcode import Model, get_init_inputs, get_inputs


def time_ms(model, inputs, warmup=10, runs=100):
    for _ in range(warmup):
        model(*inputs)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        model(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    if not torch.cuda.is_available():
        raise SystemExit("run_code.py needs a CUDA GPU")
    torch.manual_seed(0)
    init_inputs = get_init_inputs()
    torch.manual_seed(0)
    reference = Model(*init_inputs).cuda()
    torch.manual_seed(0)
    candidate = ModelNew(*init_inputs).cuda()

    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]
    with torch.no_grad():
        expected = reference(*inputs)
        actual = candidate(*inputs)
        max_err = (expected - actual).abs().max().item()
        ok = torch.allclose(expected, actual, atol=1e-4, rtol=1e-4)
        print(f"correct: {ok} (max abs error {max_err:.3e})")

        torch_ms = time_ms(reference, inputs)
        cuda_ms = time_ms(candidate, inputs)
    print(f"torch:   {torch_ms:.4f} ms")
    print(f"cuda:    {cuda_ms:.4f} ms")
    print(f"speedup: {torch_ms / cuda_ms:.2f}x")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
