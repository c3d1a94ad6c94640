import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

constexpr int THREADS = 256;  // one block per row; a multiple of 32, at most 1024

// the block's total, in every thread: warp shuffles, then the warps' partials through shared memory
__device__ float block_sum(float v) {
    __shared__ float partial[32];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.f;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}

// one block per row: the sum of squares, then x / max(sqrt(sum), eps) (F.normalize's clamp).
// VEC: the row is read and written as float4 (cols % 4 == 0, 16-byte aligned).
template <bool VEC>
__global__ void __launch_bounds__(THREADS) ds_l2norm_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                            int cols, float eps) {
    const float* row = x + (int64_t)blockIdx.x * cols;
    float* out = y + (int64_t)blockIdx.x * cols;
    float squares = 0.f;
    if (VEC) {
        const float4* row4 = reinterpret_cast<const float4*>(row);
        for (int c = threadIdx.x; c < cols / 4; c += blockDim.x) {
            float4 v = row4[c];
            squares += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) squares += row[c] * row[c];
    }
    const float denom = fmaxf(sqrtf(block_sum(squares)), eps);
    if (VEC) {
        const float4* row4 = reinterpret_cast<const float4*>(row);
        float4* out4 = reinterpret_cast<float4*>(out);
        for (int c = threadIdx.x; c < cols / 4; c += blockDim.x) {
            float4 v = row4[c];
            v.x /= denom;
            v.y /= denom;
            v.z /= denom;
            v.w /= denom;
            out4[c] = v;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] / denom;
    }
}

torch::Tensor ds_l2norm(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() >= 1, "x needs a last dimension");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t cols = xc.size(-1);
    if (xc.numel() == 0) return y;
    TORCH_CHECK(cols <= INT32_MAX, "rows longer than 2^31 - 1");
    const int64_t rows = xc.numel() / cols;
    TORCH_CHECK(rows <= INT32_MAX, "more than 2^31 - 1 rows");
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(yp) % 16 == 0;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (vec)
        ds_l2norm_kernel<true><<<rows, THREADS, 0, stream>>>(xp, yp, (int)cols, 1e-12f);
    else
        ds_l2norm_kernel<false><<<rows, THREADS, 0, stream>>>(xp, yp, (int)cols, 1e-12f);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="ds_l2norm", cpp_sources="torch::Tensor ds_l2norm(torch::Tensor x);",
                  cuda_sources=source, functions=["ds_l2norm"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.ds_l2norm(x)
