"""Class 2, honest: a faithful port of the stateful reference (one addmm for the recurrence). Its
output aliases its hidden state, as the reference's does."""

import torch
import torch.nn as nn

BATCH = 64


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        self.U = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        self.register_buffer("h", torch.zeros(BATCH, n))

    def forward(self, x):
        self.h.copy_(torch.tanh(torch.addmm(x @ self.W, self.h, self.U)))
        return self.h
