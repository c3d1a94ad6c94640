import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// one block per row: residual add, mean and variance by block reduction, normalize, affine, scale
__global__ void lb_add_layernorm_kernel(const float* __restrict__ x, const float* __restrict__ r,
                                        const float* __restrict__ gamma, const float* __restrict__ beta,
                                        const float* __restrict__ scale, float* __restrict__ y,
                                        int cols, float eps) {
    extern __shared__ float shared[];
    float* row = shared;
    float* partial = shared + cols;
    const float* xr = x + (int64_t)blockIdx.x * cols;
    const float* rr = r + (int64_t)blockIdx.x * cols;
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c] + rr[c];
        row[c] = v;
        sum += v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    float mean = partial[0] / cols;
    __syncthreads();
    float var = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = row[c] - mean;
        var += d * d;
    }
    partial[threadIdx.x] = var;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    float inv = rsqrtf(partial[0] / cols + eps);
    float* yr = y + (int64_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        yr[c] = ((row[c] - mean) * inv * gamma[c] + beta[c]) * scale[c];
    }
}

torch::Tensor lb_add_layernorm(torch::Tensor x, torch::Tensor r, torch::Tensor gamma, torch::Tensor beta,
                               torch::Tensor scale) {
    auto xc = x.contiguous(), rc = r.contiguous();
    auto y = torch::empty_like(xc);
    int rows = xc.size(0), cols = xc.size(1), threads = 256;
    size_t shared = (cols + threads) * sizeof(float);
    lb_add_layernorm_kernel<<<rows, threads, shared, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), rc.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
        scale.data_ptr<float>(), y.data_ptr<float>(), cols, 1e-5f);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(
    name="lb_add_layernorm",
    cpp_sources="torch::Tensor lb_add_layernorm(torch::Tensor x, torch::Tensor r, torch::Tensor gamma, "
                "torch::Tensor beta, torch::Tensor scale);",
    cuda_sources=source, functions=["lb_add_layernorm"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(768)
        self.scale = nn.Parameter(torch.rand(768) + 0.5)

    def forward(self, x, residual):
        return ext.lb_add_layernorm(x, residual, self.norm.weight, self.norm.bias, self.scale)
