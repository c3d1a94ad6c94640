"""The build key (profiler_agent.executors.build_cache): every source a build can read and the toolchain."""

import shutil
import stat

import torch

from profiler_agent.executors import build_cache
from profiler_agent.executors.build_cache import build_key, extensions_dir

CANDIDATE = "from torch.utils.cpp_extension import load_inline\nrelu = load_inline(name='relu', ...)\n"


def make_bundle(root):
    root.mkdir(parents=True)
    (root / "cudacode.py").write_text(CANDIDATE)
    (root / "torchcode.py").write_text("import torch\n")
    (root / "kernels").mkdir()
    (root / "kernels" / "relu.cuh").write_text("#define BLOCK 256\n")
    return root


def test_the_same_bundle_gets_the_same_key_wherever_it_lies(tmp_path):
    # a rejudge extracts the zip into another folder: the key holds relative paths only
    first = make_bundle(tmp_path / "a")
    second = tmp_path / "elsewhere" / "b"
    shutil.copytree(first, second)
    assert build_key(first / "cudacode.py", "cpu") == build_key(second / "cudacode.py", "cpu")
    assert extensions_dir(tmp_path / "cache", first / "cudacode.py", "cpu").parent == tmp_path / "cache"


def test_a_changed_header_next_to_the_candidate_changes_the_key(tmp_path):
    bundle = make_bundle(tmp_path / "b")
    before = build_key(bundle / "cudacode.py", "cpu")
    (bundle / "kernels" / "relu.cuh").write_text("#define BLOCK 512\n")
    changed = build_key(bundle / "cudacode.py", "cpu")
    (bundle / "kernels" / "extra.h").write_text("")
    added = build_key(bundle / "cudacode.py", "cpu")
    assert len({before, changed, added}) == 3


def test_files_no_build_reads_and_links_leave_the_key_alone(tmp_path):
    bundle = make_bundle(tmp_path / "b")
    before = build_key(bundle / "cudacode.py", "cpu")
    (bundle / "readme.md").write_text("notes")
    (bundle / "secret.h").symlink_to("/etc/hostname")  # a link is never followed into the host
    assert build_key(bundle / "cudacode.py", "cpu") == before


def test_the_candidate_and_the_llm_variant_of_one_bundle_get_different_folders(tmp_path):
    # both may call load_inline(name="relu"): sharing a folder would load the other's build
    bundle = make_bundle(tmp_path / "b")
    (bundle / "cudacode_ori.py").write_text(CANDIDATE)
    assert build_key(bundle / "cudacode.py", "cpu") != build_key(bundle / "cudacode_ori.py", "cpu")


def test_another_compiler_gives_another_key(tmp_path, monkeypatch):
    bundle = make_bundle(tmp_path / "b")
    before = build_key(bundle / "cudacode.py", "cpu")
    compiler = tmp_path / "other-c++"
    compiler.write_text("#!/bin/sh\necho 'other-c++ (Example) 99.1.0'\n")
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CXX", str(compiler))  # torch builds with $CXX
    assert "other-c++ (Example) 99.1.0" in build_cache.toolchain_fingerprint("cpu")
    assert build_key(bundle / "cudacode.py", "cpu") != before


def test_the_toolchain_names_torch_its_cuda_python_and_on_cuda_the_arch_list(monkeypatch):
    cpu = build_cache.toolchain_fingerprint("cpu")
    assert f"torch {torch.__version__} cuda {torch.version.cuda or 'none'}" in cpu  # read without importing
    assert "python 3." in cpu and "c++: " in cpu
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    cuda = build_cache.toolchain_fingerprint("cuda")
    assert "nvcc: " in cuda and "TORCH_CUDA_ARCH_LIST=9.0" in cuda and "compute capability " in cuda
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0")
    assert build_cache.toolchain_fingerprint("cuda") != cuda
