import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cstdint>

// h + bias in fp32, then ReLU (a NaN stays NaN, as torch.relu leaves it); rounded to half once by
// the caller: the same half as the reference's add (rounded) followed by its relu
__device__ __forceinline__ float bias_relu(float h, float b) {
    float v = h + b;
    return v < 0.f ? 0.f : v;
}

// two halves per thread (one 32-bit load and store); cols is even, so a pair never straddles two rows
__global__ void ds_bias_relu_half2_kernel(const __half2* __restrict__ h, const __half* __restrict__ bias,
                                          __half2* __restrict__ y, int64_t n2, int64_t cols) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        const int64_t c = (2 * i) % cols;
        float2 v = __half22float2(h[i]);
        y[i] = __floats2half2_rn(bias_relu(v.x, __half2float(bias[c])), bias_relu(v.y, __half2float(bias[c + 1])));
    }
}

// one half per thread: odd widths and unaligned pointers
__global__ void ds_bias_relu_half_kernel(const __half* __restrict__ h, const __half* __restrict__ bias,
                                         __half* __restrict__ y, int64_t n, int64_t cols) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half_rn(bias_relu(__half2float(h[i]), __half2float(bias[i % cols])));
}

torch::Tensor ds_bias_relu(torch::Tensor h, torch::Tensor bias) {
    TORCH_CHECK(h.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(h.scalar_type() == torch::kHalf && bias.scalar_type() == torch::kHalf, "float16 tensors expected");
    TORCH_CHECK(h.dim() >= 1 && bias.dim() == 1 && bias.size(0) == h.size(-1), "bias must match the last dimension");
    auto hc = h.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(hc);
    const int64_t n = hc.numel(), cols = hc.size(-1);
    if (n == 0) return y;
    const __half* hp = reinterpret_cast<const __half*>(hc.data_ptr<at::Half>());
    const __half* bp = reinterpret_cast<const __half*>(bc.data_ptr<at::Half>());
    __half* yp = reinterpret_cast<__half*>(y.data_ptr<at::Half>());
    const bool pairs = cols % 2 == 0 && reinterpret_cast<uintptr_t>(hp) % 4 == 0 &&
                       reinterpret_cast<uintptr_t>(yp) % 4 == 0;
    const int threads = 256;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (pairs) {
        const int64_t n2 = n / 2;
        ds_bias_relu_half2_kernel<<<(n2 + threads - 1) / threads, threads, 0, stream>>>(
            reinterpret_cast<const __half2*>(hp), bp, reinterpret_cast<__half2*>(yp), n2, cols);
    } else {
        ds_bias_relu_half_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(hp, bp, yp, n, cols);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="ds_gemm_fp16", cpp_sources="torch::Tensor ds_bias_relu(torch::Tensor h, torch::Tensor bias);",
                  cuda_sources=source, functions=["ds_bias_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter((torch.randn(4096, 4096) / 64).half())
        self.bias = nn.Parameter(torch.randn(4096).half())

    def forward(self, x):
        # the matmul stays cuBLAS's (the same call as the reference's); the bias add and ReLU are one pass
        return ext.ds_bias_relu(torch.matmul(x, self.weight), self.bias)
