"""Class 10: a build that fails (a syntax error: a missing semicolon). The same sources and toolchain
fail the same way, so a second judging should report it from the build cache at once. On a host
without CUDA the same error is built as C++ (torch's CPU build cannot build .cu sources at all)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void adv_broken_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f   // <- no semicolon
}

torch::Tensor adv_broken_relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    adv_broken_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""

CPU_SOURCE = r"""
torch::Tensor adv_broken_relu(torch::Tensor x) {
    return torch::relu(x)   // <- no semicolon
}
"""

DECLARATION = "torch::Tensor adv_broken_relu(torch::Tensor x);"
if torch.cuda.is_available():
    ext = load_inline(name="adv_compile_error", cpp_sources=DECLARATION, cuda_sources=CUDA_SOURCE,
                      functions=["adv_broken_relu"], verbose=False)
else:
    ext = load_inline(name="adv_compile_error", cpp_sources=CPU_SOURCE, functions=["adv_broken_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.adv_broken_relu(x)
