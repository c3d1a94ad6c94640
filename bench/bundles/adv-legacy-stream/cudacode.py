"""Class 8: a custom ReLU launched on the legacy default stream (`<<<grid, block>>>`, no stream).
Right, and timed right per call (torch's stream is the legacy one outside a capture), but a CUDA
graph captured on torch's capture stream does not contain it: the replay is empty."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void adv_relu_legacy_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) { float v = x[i]; y[i] = v > 0.f ? v : 0.f; }
}

torch::Tensor adv_relu_legacy(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    int blocks = (int)std::min<long>((n + 255) / 256, 132L * 16);
    adv_relu_legacy_kernel<<<blocks, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);  // stream 0
    return y;
}
"""

ext = load_inline(name="adv_relu_legacy", cpp_sources="torch::Tensor adv_relu_legacy(torch::Tensor x);",
                  cuda_sources=CUDA_SOURCE, functions=["adv_relu_legacy"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.adv_relu_legacy(x)
