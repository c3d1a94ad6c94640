"""Class 1: a CUDA graph captured on the first call's input tensor, replayed ever after. Nothing is
copied in: every later call reads the first call's address, right only while the allocator happens
to hand the next input the same address."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if not hasattr(self, "graph"):
            side = torch.cuda.Stream()  # warm-up off the capturing stream, as torch's docs do it
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(x)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = torch.relu(x)
        self.graph.replay()
        return self.out
