"""Class 9: 6 GiB of host memory allocated and touched while the module is imported (the build
phase), then an honest ReLU. Judged under --memory-limit 4G."""

import torch
import torch.nn as nn

_BALLAST = torch.ones(6 << 30, dtype=torch.uint8)  # every page written: resident, not just reserved


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
