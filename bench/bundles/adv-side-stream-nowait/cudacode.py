"""Class 5: a side stream that joins the caller's stream at the end but starts without waiting for
it, so its work can start under the L2 flush (or anything the timer enqueued) before the start
event, and the event pair sees only its tail."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, x):
        with torch.cuda.stream(self.side):  # no wait_stream: starts as soon as it is launched
            y = torch.relu(x)
        torch.cuda.current_stream().wait_stream(self.side)
        return y
