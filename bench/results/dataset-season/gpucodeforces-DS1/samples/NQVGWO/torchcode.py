import torch
import torch.nn as nn


class Model(nn.Module):
    """A small MLP block: Linear, GELU, Linear on a 64-row batch (three short kernels a call)."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(512, 2048)
        self.down = nn.Linear(2048, 512)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return []
