"""Class 11: a forward that ends the process (exit code 0, no report)."""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os._exit(0)
