import torch
import torch.nn as nn


class Model(nn.Module):
    """A 4096 x 4096 x 4096 fp16 matmul, then a bias add and a ReLU as two more kernels."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter((torch.randn(4096, 4096) / 64).half())
        self.bias = nn.Parameter(torch.randn(4096).half())

    def forward(self, x):
        return torch.relu(x @ self.weight + self.bias)


def get_inputs():
    return [torch.randn(4096, 4096).half()]


def get_init_inputs():
    return []
