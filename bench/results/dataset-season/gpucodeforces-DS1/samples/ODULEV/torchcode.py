import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish (SiLU) written out as x * sigmoid(x): two elementwise kernels and a temporary, over 64M floats."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


def get_inputs():
    # 3 past a multiple of four: the candidate's scalar tail runs too
    return [torch.randn(64 * 1024 * 1024 + 3)]


def get_init_inputs():
    return []
