import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

// the reference's bias add then ReLU (a NaN stays NaN, as torch.relu leaves it)
__device__ __forceinline__ float bias_relu(float h, float b) {
    float v = h + b;
    return v < 0.f ? 0.f : v;
}

// NCHW, four floats per thread: plane (H * W) is a multiple of four, so a float4 lies in one channel
__global__ void ds_bias_relu_vec4_kernel(const float4* __restrict__ h, const float* __restrict__ bias,
                                         float4* __restrict__ y, int64_t n4, int64_t plane, int64_t channels) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        const float b = bias[((4 * i) / plane) % channels];
        float4 v = h[i];
        v.x = bias_relu(v.x, b);
        v.y = bias_relu(v.y, b);
        v.z = bias_relu(v.z, b);
        v.w = bias_relu(v.w, b);
        y[i] = v;
    }
}

// one float per thread: any plane size, unaligned pointers
__global__ void ds_bias_relu_scalar_kernel(const float* __restrict__ h, const float* __restrict__ bias,
                                           float* __restrict__ y, int64_t n, int64_t plane, int64_t channels) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = bias_relu(h[i], bias[(i / plane) % channels]);
}

torch::Tensor ds_bias_relu_nchw(torch::Tensor h, torch::Tensor bias) {
    TORCH_CHECK(h.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(h.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32, "float32 tensors expected");
    TORCH_CHECK(h.dim() == 4 && bias.dim() == 1 && bias.size(0) == h.size(1), "NCHW input and one bias per channel expected");
    auto hc = h.contiguous();  // NCHW order, whatever layout the convolution returned
    auto bc = bias.contiguous();
    auto y = torch::empty_like(hc);
    const int64_t n = hc.numel(), channels = hc.size(1), plane = hc.size(2) * hc.size(3);
    if (n == 0) return y;
    const float* hp = hc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const bool vec = plane % 4 == 0 && reinterpret_cast<uintptr_t>(hp) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(yp) % 16 == 0;
    const int threads = 256;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (vec) {
        const int64_t n4 = n / 4;
        ds_bias_relu_vec4_kernel<<<(n4 + threads - 1) / threads, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(hp), bc.data_ptr<float>(), reinterpret_cast<float4*>(yp), n4, plane,
            channels);
    } else {
        ds_bias_relu_scalar_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(
            hp, bc.data_ptr<float>(), yp, n, plane, channels);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="ds_conv_bias_relu",
                  cpp_sources="torch::Tensor ds_bias_relu_nchw(torch::Tensor h, torch::Tensor bias);",
                  cuda_sources=source, functions=["ds_bias_relu_nchw"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # the reference's parameters, created in the same order from the same seed
        self.conv = nn.Conv2d(64, 128, kernel_size=3, padding=1, bias=False)
        self.bias = nn.Parameter(torch.randn(128) * 0.1)

    def forward(self, x):
        # the convolution stays cuDNN's (the reference's own call, so the same result bit for bit);
        # the bias add and ReLU are one pass over its output
        return ext.ds_bias_relu_nchw(self.conv(x), self.bias)
