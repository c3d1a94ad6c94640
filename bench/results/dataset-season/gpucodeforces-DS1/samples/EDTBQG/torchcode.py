import torch
import torch.nn as nn


class Model(nn.Module):
    """Residual add, LayerNorm, then a scale: three short kernels on a 128 x 768 activation."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(768)
        self.scale = nn.Parameter(torch.rand(768) + 0.5)

    def forward(self, x, residual):
        return self.norm(x + residual) * self.scale


def get_inputs():
    return [torch.randn(128, 768), torch.randn(128, 768)]


def get_init_inputs():
    return []
