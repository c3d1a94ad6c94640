import torch
import torch.nn as nn

BATCH, HIDDEN = 64, 128


class Model(nn.Module):
    """An RNN cell whose hidden state is a buffer updated by every call; the output aliases it."""

    def __init__(self, n):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        self.U = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        self.register_buffer("h", torch.zeros(BATCH, n))

    def forward(self, x):
        self.h.copy_(torch.tanh(x @ self.W + self.h @ self.U))
        return self.h


def get_inputs():
    return [torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
