"""Kernel names from the bundle's own build (profiler_agent.measure.kernel_symbols), read from a real
shared object and a real cubin built here with nvcc, and the census that counts only those as custom:
the driver's copies inside captured graphs (memcpy32_post, memcpy128) and ATen's kernels are not."""

import json
import shutil
import subprocess

import pytest

from profiler_agent.measure import kernel_symbols
from profiler_agent.measure.kernel_census import Census, is_library_kernel, own_names_or_none

KERNELS_CU = r"""
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
namespace my_ns {
template <int B> __global__ void tiled_fill(float* y) { y[threadIdx.x] = B; }
template __global__ void tiled_fill<64>(float*);
}
extern "C" void launch(const float* x, float* y, long n) { relu_kernel<<<(n + 255) / 256, 256>>>(x, y, n); }
"""

ATEN_RELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
             "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::"
             "ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
             "{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)")
DRIVER_COPIES = ["memcpy32_post", "memcpy128", "memset32_aligned1D"]
BUNDLES_KERNELS = ["relu_kernel(float const*, float*, long)", "void my_ns::tiled_fill<64>(float*)"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A bundle's build folder with a shared object and a cubin nvcc made from KERNELS_CU."""
    nvcc = shutil.which("nvcc")
    assert nvcc, "nvcc is installed on the CI and dev hosts (the CUDA toolkit without a GPU)"
    folder = tmp_path_factory.mktemp("build")
    (folder / "kernels.cu").write_text(KERNELS_CU)
    for args in (["-shared", "-Xcompiler", "-fPIC", "-o", "kernels.so"], ["-cubin", "-o", "kernels.cubin"]):
        subprocess.run([nvcc, "-arch=sm_90", *args, "kernels.cu"], cwd=folder, check=True, timeout=300)
    return folder


def test_the_shared_objects_symbol_table_names_its_kernels(built):
    names = kernel_symbols.elf_function_names(built / "kernels.so")
    # nvcc's host-side launch stubs carry the kernels' names (a template's with internal linkage: L)
    assert {"_Z11relu_kernelPKfPfl", "_ZN5my_nsL10tiled_fillILi64EEEvPf"} <= names
    assert kernel_symbols.demangle("_ZN5my_nsL10tiled_fillILi64EEEvPf") == "void my_ns::tiled_fill<64>(float*)"
    assert "launch" in names
    assert "dlopen" not in names and "pthread_create" not in names  # imported from libc, not defined here


def test_a_cubins_symbol_table_names_its_kernels(built):
    assert kernel_symbols.elf_function_names(built / "kernels.cubin") == {
        "_Z11relu_kernelPKfPfl", "_ZN5my_ns10tiled_fillILi64EEEvPf"}


def test_not_an_elf_file_has_no_names(tmp_path):
    (tmp_path / "fake.so").write_bytes(b"\x7fELF not really" * 10)
    (tmp_path / "empty.so").write_bytes(b"")
    assert kernel_symbols.elf_function_names(tmp_path / "fake.so") == set()
    assert kernel_symbols.elf_function_names(tmp_path / "empty.so") == set()


def test_names_are_kept_mangled_and_demangled(built):
    own = kernel_symbols.own_kernel_names([built])
    assert "_Z11relu_kernelPKfPfl" in own and "relu_kernel(float const*, float*, long)" in own
    assert "void my_ns::tiled_fill<64>(float*)" in own


def test_triton_kernels_are_named_by_the_runs_cache(tmp_path):
    entry = tmp_path / "triton" / "ABCDEF"
    entry.mkdir(parents=True)
    (entry / "add_kernel.json").write_text(json.dumps({"name": "add_kernel", "num_warps": 4}))
    assert "add_kernel" in kernel_symbols.own_kernel_names([], tmp_path / "triton")


def test_only_kernels_from_the_bundles_build_are_custom(built):
    own = kernel_symbols.own_kernel_names([built])
    launched = [*DRIVER_COPIES, ATEN_RELU, *BUNDLES_KERNELS, "_Z11relu_kernelPKfPfl"]
    census = Census("cuda_kernels", launched, [ATEN_RELU], own)
    assert census.custom() == [*BUNDLES_KERNELS, "_Z11relu_kernelPKfPfl"]
    assert census.has_custom_kernel(loaded_native=True) is True
    assert all(is_library_kernel(name) for name in DRIVER_COPIES)


def test_a_torch_only_candidate_copying_inside_a_captured_graph_has_no_custom_kernel():
    # what escaped before: the driver's copies were neither the reference's nor a library's
    launched = ["memcpy32_post", "memcpy128", ATEN_RELU]
    own = own_names_or_none(set(), loaded_native=False)  # no build, no native module
    assert Census("cuda_kernels", launched, [ATEN_RELU], own).has_custom_kernel(loaded_native=False) is False


def test_a_kernel_named_like_the_bundles_but_not_built_by_it_is_not_custom(built):
    own = kernel_symbols.own_kernel_names([built])
    census = Census("cuda_kernels", ["gelu_kernel(float const*, float*, long)"], [ATEN_RELU], own)
    assert census.custom() == [] and census.has_custom_kernel(loaded_native=True) is False


def test_a_toolkit_whose_jit_keeps_nothing_on_disk_falls_back_to_the_older_rule():
    own = own_names_or_none(set(), loaded_native=True)
    assert own is None
    census = Census("cuda_kernels", ["my_numba_kernel", "memcpy128"], [ATEN_RELU], own)
    assert census.custom() == ["my_numba_kernel"]
