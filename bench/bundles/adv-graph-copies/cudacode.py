"""Class 7: torch only, its work inside a CUDA graph it captured (ATen's ReLU and a copy). Right on
every call (the input is copied into the graph's buffer first). The graph's copy runs as the driver's
own kernels (memcpy32_post, memcpy128), which are no custom kernel."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if getattr(self, "graph", None) is None or self.static_in.shape != x.shape:
            self.static_in = torch.empty_like(x)
            self.static_out = torch.empty_like(x)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(self.static_in)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out.copy_(torch.relu(self.static_in))
        self.static_in.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
