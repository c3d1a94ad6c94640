"""The kernel census behind `no_custom_kernel`: the kernel-name classifier on real kernel names, the
CPU op census on real profiler runs, and judged C++ bundles on CPU."""

import shutil
from pathlib import Path

import pytest
import torch

from profiler_agent.measure import kernel_census
from profiler_agent.measure.kernel_census import Census, custom_kernels, is_library_kernel, qualified_name
from profiler_agent.protocol.result_schema import validate_result
from tests.agent.conftest import EXAMPLES


@pytest.fixture
def build_cache(examples_build_cache) -> Path:
    return examples_build_cache  # examples/relu-cpu, judged here, is built there once a run


FAST = ("--timing-budget", "0.2")  # timing is not what these tests look at

# Kernel names as the CUDA profiler reports them (demangled), from ATen and the vendor libraries.
LIBRARY_KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar"
    "(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::"
    "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"
    "(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, "
    "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda"
    "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
    "{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::"
    "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda"
    "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
    "{lambda(float)#1} const&)::{lambda(int)#1})",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::"
    "sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned "
    "int, float, 4>)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::"
    "(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    "void softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, "
    "bool const*, int, bool)",
    "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<long, "
    "long, int>::Policy800, false, long, long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>"
    "(int*, int*, long*, long const*, long*, long const*, int, int, int, at_cuda_detail::cub::detail::"
    "identity_decomposer_t)",
    "ampere_sgemm_128x64_nn",
    "volta_sgemm_128x64_tn",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_"
    "kernel__5x_cublas",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize96x64x32_stage3_warpsize2x2x1_tensor16x8x16_kernel",
    "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_16x16_64x1_tn_align8>"
    "(cutlass_80_wmma_tensorop_s161616gemm_f16_16x16_64x1_tn_align8::Params)",
    "cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
    "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched"
    "<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, "
    "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
    "cublasGemvTensorStridedBatched<float>, float>, float, float)",
    "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, "
    "true, true, false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
    "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >"
    "(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched"
    "<float const>, cublasGemvTensorStridedBatched<float>, float>)",
    "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>"
    "(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, "
    "float const*, float const*, float*, void*, long, float*, int*)",
    "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_"
    "warpsize2x2x1_g1_tensor16x8x8_kernel",
    "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::"
    "WinogradDataParams<float, float>)",
    "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, "
    "float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, "
    "int, float const*, float const*, bool, int, int)",
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::"
    "Sm80, true, 64, 64, 64, true, true>::Params)",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
    "false, cutlass::half_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, "
    "false, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)",
    "void regular_fft<256u, 16u, 8u, 2u, 0u, (fft_direction_t)0, float2>(float2*, float2 const*, ...)",
    "triton_poi_fused_relu_0",
    "Memcpy HtoD (Pageable -> Device)",
    "Memset (Device)",
]

# Contestants' kernels: the first three as bench/results/precision/ncu.log (Nsight Compute) and the torch
# profiler (its own spelling of const) name the bench's load_inline kernels, then a templated
# kernel whose arguments mention c10:: types, and a Triton kernel (named after its function).
CUSTOM_KERNELS = [
    "relu_kernel(const float *, float *, long)",
    "relu_kernel(float const*, float*, long)",
    "gemm_naive_kernel(const float *, const float *, float *, int, int, int)",
    "softmax_kernel(const float *, float *, int)",
    "void fused_gelu_kernel<c10::Half>(c10::Half const*, c10::Half*, long)",
    "void my_ns::tiled_sgemm<64, 64, 8>(float const*, float const*, float*, int, int, int)",
    "add_kernel",
]


@pytest.mark.parametrize("name", LIBRARY_KERNELS)
def test_aten_and_vendor_library_kernels_are_recognized(name):
    assert is_library_kernel(name)


@pytest.mark.parametrize("name", CUSTOM_KERNELS)
def test_contestants_kernels_are_not_taken_for_library_kernels(name):
    assert not is_library_kernel(name)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("relu_kernel(float const*, float*, long)", "relu_kernel"),
        ("void fused_gelu_kernel<c10::Half>(c10::Half const*, c10::Half*, long)", "fused_gelu_kernel"),
        ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)",
         "at::native::{anonymous}::cunn_SoftMaxForward"),
        ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, float>(cublasGemvParamsEx<int>)",
         "internal::gemvx::kernel"),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT"),
    ],
)
def test_the_qualified_name_leaves_out_return_type_template_arguments_and_parameters(name, expected):
    assert qualified_name(name) == expected


def test_a_custom_kernel_is_one_neither_the_reference_nor_a_library_launched():
    aten_relu = LIBRARY_KERNELS[0]
    assert custom_kernels([aten_relu, "Memset (Device)"], [aten_relu]) == []
    assert custom_kernels(["relu_kernel(float const*, float*, long)", aten_relu], [aten_relu]) == [
        "relu_kernel(float const*, float*, long)"
    ]
    # a kernel the reference launched too counts as the reference's, whatever its name
    assert custom_kernels(["my_fused_kernel"], ["my_fused_kernel"]) == []
    on_gpu = Census("cuda_kernels", ["relu_kernel(float const*, float*, long)"], [aten_relu])
    assert on_gpu.has_custom_kernel(loaded_native=False) is True  # the kernels decide on CUDA
    assert Census("cuda_kernels", [aten_relu], [aten_relu]).has_custom_kernel(loaded_native=True) is False
    # nothing seen for the reference: the profiler may be blind to the device, so the census cannot tell
    assert Census("cuda_kernels", [], []).has_custom_kernel(loaded_native=True) is None


def _ops_of(fn, *inputs):
    events = kernel_census.profile_call(fn, list(inputs), torch.device("cpu"))
    return kernel_census.cpu_compute_ops(events)


def test_cpu_compute_ops_are_the_innermost_aten_ops_without_allocation_view_or_copy():
    x = torch.randn(8, 8)
    assert _ops_of(torch.relu, x) == ["aten::clamp_min"]  # relu runs clamp_min
    assert _ops_of(lambda t: torch.clamp_min(t, 0), x) == ["aten::clamp_min"]
    assert _ops_of(torch.nn.Linear(8, 8), x) == ["aten::addmm"]  # not linear, t or the bias expand
    assert _ops_of(lambda t: t.t().contiguous(), x) == []
    assert _ops_of(lambda t: torch.softmax(t * 2, -1), x) == ["aten::mul", "aten::_softmax"]


def test_profiling_a_call_imports_no_compiler_stack():
    # torch.profiler.profile's start imports torch._inductor (and dynamo): 0.9-1.2 s of CPU a judging
    import subprocess
    import sys

    probe = ("import sys, torch\n"
             "from profiler_agent.measure import kernel_census\n"
             "events = kernel_census.profile_call(torch.relu, [torch.randn(4)], torch.device('cpu'))\n"
             "print(kernel_census.cpu_compute_ops(events), sorted(m for m in sys.modules if m.startswith(("
             "'torch._inductor', 'torch._dynamo'))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "['aten::clamp_min'] []", done.stderr[-2000:]


def test_on_cpu_only_a_native_candidate_that_skips_the_references_ops_has_a_custom_kernel():
    reference_ops = ["aten::clamp_min"]
    assert Census("cpu_ops", [], reference_ops).has_custom_kernel(loaded_native=True) is True
    assert Census("cpu_ops", ["aten::mul"], reference_ops).has_custom_kernel(loaded_native=True) is True
    assert Census("cpu_ops", ["aten::clamp_min"], reference_ops).has_custom_kernel(loaded_native=True) is False
    assert Census("cpu_ops", [], reference_ops).has_custom_kernel(loaded_native=False) is False
    assert Census("cpu_ops", [], []).has_custom_kernel(loaded_native=True) is None  # cannot tell


def test_the_reported_census_is_rebuilt_with_known_keys_and_capped_lists():
    hostile = {
        "seen": "cuda_kernels",
        "candidate": ["k" * 5000] * 500 + [7],
        "reference": "not a list",
        "custom": None,
        "verdict": "passed",
    }
    kept = kernel_census.from_report(hostile)
    assert set(kept) == {"seen", "candidate", "reference", "custom"}
    assert len(kept["candidate"]) == kernel_census.MAX_NAMES
    assert all(len(name) == kernel_census.MAX_NAME_CHARS for name in kept["candidate"])
    assert kept["reference"] == [] and kept["custom"] is None
    assert kernel_census.from_report({"seen": "elsewhere"}) is None
    assert kernel_census.from_report(["aten::relu"]) is None


# ---- judged on CPU ------------------------------------------------------------------------------

ATEN_RELU_EXTENSION = '''
    import torch
    from torch.utils.cpp_extension import load_inline

    # compiled, but the work is ATen's: at::relu is the reference's own op
    source = "at::Tensor relu_forward(const at::Tensor& x) { return at::relu(x); }"
    relu = load_inline(name="relu", cpp_sources=source, functions=["relu_forward"], extra_cflags=["-O3"],
                       verbose=True)  # -O3: the run's precompiled header (tests/conftest.py)

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return relu.relu_forward(x)
'''


def test_an_extension_with_its_own_loop_has_a_custom_kernel(judge, tmp_path):
    bundle = shutil.copytree(EXAMPLES / "relu-cpu", tmp_path / "relu-cpu")  # all of it: the example's build key
    result = judge(bundle, *FAST).result
    validate_result(result)
    assert result["status"] == "passed"
    assert "no_custom_kernel" not in result["flags"]
    kernels = result["kernels"]
    assert kernels["seen"] == "cpu_ops" and kernels["reference"] == ["aten::clamp_min"]
    assert "aten::clamp_min" not in kernels["candidate"]  # the loop is invisible; relu's op never ran


def test_an_extension_that_calls_aten_relu_has_no_custom_kernel(make_bundle, judge):
    result = judge(make_bundle(ATEN_RELU_EXTENSION), *FAST).result
    validate_result(result)
    assert result["status"] == "passed"
    assert result["flags"] == ["no_custom_kernel"]
    assert result["kernels"]["candidate"] == result["kernels"]["reference"] == ["aten::clamp_min"]


def test_a_python_candidate_calling_torch_relu_has_no_custom_kernel(make_bundle, judge):
    result = judge(make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)
    '''), *FAST).result
    assert result["status"] == "passed" and result["flags"] == ["no_custom_kernel"]
    assert result["kernels"] == {"seen": "cpu_ops", "candidate": ["aten::clamp_min"],
                                 "reference": ["aten::clamp_min"], "custom": None}


def test_a_candidate_that_cannot_be_profiled_keeps_its_verdict_and_has_no_census(make_bundle, judge):
    result = judge(make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                if torch._C._autograd._profiler_enabled():
                    raise SystemExit(3)  # even an exit under the profiler only ends the census
                return torch.relu(x)
    '''), *FAST).result
    validate_result(result)
    assert result["status"] == "passed"
    assert result["kernels"] is None
    assert result["flags"] == ["no_custom_kernel"]  # the loaded-modules check decided alone
