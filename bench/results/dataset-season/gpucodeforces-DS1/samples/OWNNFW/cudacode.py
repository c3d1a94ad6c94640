import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// one block per row of the attention matrix: dS = P * (dP - sum_j P_j dP_j), the softmax's backward
__global__ void softmax_backward_kernel(const float* __restrict__ p, const float* __restrict__ dp,
                                        float* __restrict__ ds, int cols) {
    __shared__ float shared[256];
    const int64_t base = (int64_t)blockIdx.x * cols;
    float dot = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) dot += p[base + c] * dp[base + c];
    shared[threadIdx.x] = dot;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    const float total = shared[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) ds[base + c] = p[base + c] * (dp[base + c] - total);
}

torch::Tensor softmax_backward(torch::Tensor p, torch::Tensor dp) {
    TORCH_CHECK(p.is_cuda() && p.scalar_type() == torch::kFloat32 && p.sizes() == dp.sizes());
    auto pc = p.contiguous();
    auto dpc = dp.contiguous();
    auto ds = torch::empty_like(pc);
    int cols = pc.size(-1);
    int rows = pc.numel() / cols;
    softmax_backward_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        pc.data_ptr<float>(), dpc.data_ptr<float>(), ds.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return ds;
}
"""

ext = load_inline(name="attention_backward", cpp_sources="torch::Tensor softmax_backward(torch::Tensor p, torch::Tensor dp);",
                  cuda_sources=source, functions=["softmax_backward"], verbose=False)


class Attention(torch.autograd.Function):
    """softmax(q k^T / sqrt(d)) v, keeping the attention matrix for a backward whose softmax part is
    one fused kernel; the matrix products stay cuBLAS's."""

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        grad = grad.contiguous()
        dv = p.transpose(-2, -1) @ grad
        ds = ext.softmax_backward(p, grad @ v.transpose(-2, -1))
        dq = ds @ k * ctx.scale
        dk = ds.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return Attention.apply(q, k, v)
