"""compare.compare_outputs against the whole-tensor float64 rule it replaced, on one device: the same
verdict and figures for every dtype and shape, and the time of one 4M-float comparison.

    python bench/judge/output_compare.py --device cuda
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from profiler_agent.checkers import compare_outputs as compare  # noqa: E402


def whole_tensor(expected, actual, atol, rtol):
    exp64, act64 = expected.double(), actual.double()
    diff, ref_abs = (act64 - exp64).abs_(), exp64.abs()
    close = bool((diff <= atol + rtol * ref_abs).all())
    abs_err = float(diff.max()) if diff.numel() else 0.0
    nonzero = ref_abs > 0
    rel_err = float((diff[nonzero] / ref_abs[nonzero]).max()) if bool(nonzero.any()) else 0.0
    return close, abs_err, rel_err


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = torch.device(parser.parse_args().device)
    torch.manual_seed(0)
    cases = 0
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for shape in ((4096, 1024), (3, 5), (0,), (70001,), (2, 3, 4)):
            for scale in (0.0, 1e-6, 1e-4, 1e-2, 1.0):
                expected = torch.randn(shape, device=device).to(dtype)
                if expected.numel() > 3:
                    expected.view(-1)[:3] = 0
                actual = (expected.double() + scale * torch.randn(shape, device=device).double()).to(dtype)
                atol, rtol = compare.tolerances(dtype, None, None)
                got = compare.compare_outputs(expected, actual)
                assert (got.passed, got.max_abs_err, got.max_rel_err) == whole_tensor(expected, actual, atol, rtol)
                cases += 1
    expected = torch.randn(300, 400, device=device).t()
    actual = expected + 1e-5 * torch.randn(300, 400, device=device).t()  # non-contiguous
    got = compare.compare_outputs(expected, actual)
    assert (got.passed, got.max_abs_err, got.max_rel_err) == whole_tensor(expected, actual, 1e-4, 1e-4)
    print(f"{device}: identical in {cases + 1} cases")
    expected = torch.randn(4096, 1024, device=device)
    actual = expected.clone()
    for name, run in (("compare_outputs", lambda: compare.compare_outputs(expected, actual)),
                      ("whole tensor", lambda: whole_tensor(expected, actual, 1e-4, 1e-4))):
        run()
        started = time.perf_counter()
        for _ in range(5):
            run()
        print(f"{name}: {(time.perf_counter() - started) / 5 * 1000:.1f} ms for 4M floats")


if __name__ == "__main__":
    main()
