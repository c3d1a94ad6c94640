import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A wrong candidate on purpose: it scales the positive half, so the judge says wrong_answer."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(min=0) * 1.5
