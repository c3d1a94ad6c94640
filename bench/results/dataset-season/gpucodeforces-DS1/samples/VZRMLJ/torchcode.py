import torch
import torch.nn as nn


class Model(nn.Module):
    """A 4096-wide fp32 matmul then ReLU: a few milliseconds of GPU work per call, so that NVML sees
    the GPU busy while bench/fleet_gpu.py times it."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4096, 4096) / 64)

    def forward(self, x):
        return torch.relu(x @ self.weight)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
