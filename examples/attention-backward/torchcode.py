import torch
import torch.nn as nn
import torch.nn.functional as F

# Judged forward and backward (profiler_agent/bundles/forward_backward.py): the attention output, then
# the gradients of q, k and v are compared; forward plus backward is timed.
JUDGE_BACKWARD = True


class Model(nn.Module):
    """Scaled dot-product attention, 4 x 8 heads, 256 positions, head size 64 (seed 002: FA2 backward)."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [torch.randn(4, 8, 256, 64), torch.randn(4, 8, 256, 64), torch.randn(4, 8, 256, 64)]


def get_init_inputs():
    return []
