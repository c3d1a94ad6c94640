"""FLOP counting: torch's own formulas, without the first-use import of torch._dynamo that cost
3.5-6 s of every judging."""

import subprocess
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from profiler_agent.devices.peaks import flops_dtype
from profiler_agent.measure.metrics import count_flops, count_flops_and_convolution_share, tf32_allowed

CASES = {
    "linear": (lambda: torch.nn.Linear(512, 256), lambda: [torch.randn(64, 512)]),
    "conv": (lambda: torch.nn.Conv2d(3, 16, 3), lambda: [torch.randn(2, 3, 32, 32)]),
    "attention": (lambda: torch.nn.MultiheadAttention(64, 4, batch_first=True), lambda: [torch.randn(2, 10, 64)] * 3),
    "mlp-block": (lambda: torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)),
                  lambda: [torch.randn(4, 8)]),
    "bmm": (lambda: (lambda a, b: torch.bmm(a, b)), lambda: [torch.randn(3, 4, 5), torch.randn(3, 5, 6)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts_what_torchs_flop_counter_counts(name):
    make_model, make_inputs = CASES[name]
    model, inputs = make_model(), make_inputs()
    torch_counter = FlopCounterMode(display=False)
    with torch.no_grad(), torch_counter:
        model(*inputs)
    assert count_flops(model, inputs) == torch_counter.get_total_flops() > 0


def test_elementwise_only_models_count_nothing():
    assert count_flops(torch.nn.ReLU(), [torch.randn(100)]) is None


def test_counting_does_not_import_dynamo():
    code = (
        "import sys, torch\n"
        "from profiler_agent.measure.metrics import count_flops\n"
        "assert count_flops(torch.nn.Linear(16, 16), [torch.randn(4, 16)]) == 2 * 4 * 16 * 16\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False", shown.stderr


def test_convolutions_count_against_cudnns_tf32_switch_and_matmuls_against_their_own():
    # ds-conv-bias-relu on the H100 read 167% of the fp32 peak: cuDNN ran it in TF32 (its switch is on
    # by default) while the peak followed the matmul switch (off)
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU())
    total, share = count_flops_and_convolution_share(conv, [torch.randn(2, 3, 32, 32)])
    assert total == count_flops(conv, [torch.randn(2, 3, 32, 32)]) and share > 0.9
    assert flops_dtype([torch.randn(2)], tf32_allowed(False, True, share)) == "tf32"
    total, share = count_flops_and_convolution_share(torch.nn.Linear(16, 16), [torch.randn(4, 16)])
    assert total == 2 * 4 * 16 * 16 and share == 0.0
    assert flops_dtype([torch.randn(2)], tf32_allowed(False, True, share)) == "fp32"
    assert flops_dtype([torch.randn(2)], tf32_allowed(True, False, share)) == "tf32"
    assert count_flops_and_convolution_share(torch.nn.ReLU(), [torch.randn(8)]) == (None, 0.0)
