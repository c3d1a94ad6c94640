import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Pure torch (nothing to build): the same product, ReLU applied in place."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4096, 4096) / 64)

    def forward(self, x):
        return (x @ self.weight).clamp_(min=0)
