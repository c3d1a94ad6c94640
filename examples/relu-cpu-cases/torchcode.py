import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_cases():
    """Named input cases: every one is checked, the benchmark ones (and "both") timed; the speedup is
    the geometric mean of the timed cases' speedups."""
    return {
        "rows": dict(kind="both", inputs=lambda: [torch.randn(1024, 256)]),
        "wide": dict(kind="benchmark", inputs=lambda: [torch.randn(64, 8192)]),
        "ragged": dict(kind="test", inputs=lambda: [torch.randn(7, 13)]),
    }


def get_init_inputs():
    return []
