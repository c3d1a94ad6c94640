"""The nvcc front of judged builds (profiler_agent.executors.nvcc_front), with the real nvcc: the same
object and dependency file as nvcc's own, nvcc's own errors, nvcc itself for what it does not handle,
and torch's build.ninja naming it."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from profiler_agent.executors import nvcc_front_install, nvcc_front

TEMP_NAME = re.compile(rb"tmpxft_[0-9a-f]{8}_")  # nvcc's temporary file name (its pid) in the object's file symbol

# device code on both sides of the __CUDA_ARCH__ line, and a header the host side alone includes
SOURCE = """
#include <cstdio>
#ifndef __CUDA_ARCH__
#include <vector>
#endif
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
void launch(float* x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"""


@pytest.fixture(scope="module")
def nvcc():
    found = shutil.which("nvcc")
    assert found, "nvcc is installed on the CI and dev hosts (the CUDA toolkit without a GPU)"
    return found


def front(nvcc, *args, cwd, trace=True, retried=False, side_by_side_max_mb=None):
    env = {**os.environ, nvcc_front.TRACE_ENV: "1" if trace else "0", nvcc_front.RETRIED_ENV: "1" if retried else "0"}
    if side_by_side_max_mb is not None:
        env[nvcc_front.SIDE_BY_SIDE_MAX_MB_ENV] = str(side_by_side_max_mb)
    return subprocess.run([sys.executable, nvcc_front.__file__, nvcc, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def plain(nvcc, *args, cwd):
    return subprocess.run([nvcc, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def trace_lines(stderr: str) -> dict[str, tuple[float, float]]:
    """tool -> (started at, seconds) from the front's trace (the first step of each tool)."""
    found = re.findall(r"\[nvcc_parallel\] (\S+) \+([\d.]+) s, ([\d.]+) s", stderr)
    return {tool: (float(start), float(took)) for tool, start, took in reversed(found)}


def test_the_front_makes_nvccs_object_and_dependency_file_with_both_sides_at_once(tmp_path, nvcc):
    (tmp_path / "k.cu").write_text(SOURCE)
    # torch's older dependency flags, two architectures (two device passes, one cudafe++)
    flags = ["--generate-dependencies-with-compile", "--dependency-output", "{}.d", "-gencode=arch=compute_90,code=sm_90",
             "-gencode=arch=compute_80,code=sm_80", "--compiler-options", "-fPIC", "-std=c++17", "-c", "k.cu", "-o", "{}.o"]
    expected = plain(nvcc, *[f.format("plain") for f in flags], cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    done = front(nvcc, *[f.format("front") for f in flags], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "plain nvcc" not in done.stderr, done.stderr  # the front compiled it itself
    assert "front ends side by side" in done.stderr
    steps = trace_lines(done.stderr)
    cudafe_start, cudafe_s = steps["cudafe++"]
    assert steps["cicc"][0] < cudafe_start + cudafe_s  # a device pass started before cudafe++ ended
    assert (TEMP_NAME.sub(b"", (tmp_path / "front.o").read_bytes())
            == TEMP_NAME.sub(b"", (tmp_path / "plain.o").read_bytes()))
    depfile = (tmp_path / "front.d").read_text()
    assert depfile == (tmp_path / "plain.d").read_text().replace("plain.o :", "front.o :", 1)
    assert "/vector " in depfile.replace("\\\n", " ")  # the host side's own headers are in it
    assert not list(Path(tmp_path).glob("tmpxft*"))

    # a source preprocessed larger than the limit (memory): the front ends one after the other
    done = front(nvcc, *[f.format("sequential") for f in flags], cwd=tmp_path, side_by_side_max_mb=0)
    assert done.returncode == 0 and "front ends one after the other" in done.stderr, done.stderr
    steps = trace_lines(done.stderr)
    assert steps["cicc"][0] >= sum(steps["cudafe++"]) - 0.02  # the trace's rounding
    assert (TEMP_NAME.sub(b"", (tmp_path / "sequential.o").read_bytes())
            == TEMP_NAME.sub(b"", (tmp_path / "plain.o").read_bytes()))


def test_a_syntax_error_gets_nvccs_own_messages_and_exit_status(tmp_path, nvcc):
    (tmp_path / "bad.cu").write_text("__global__ void k(float* x) { x[0] = 1 }\n")
    expected = plain(nvcc, "-c", "bad.cu", "-o", "bad.o", cwd=tmp_path)
    done = front(nvcc, "-c", "bad.cu", "-o", "bad.o", cwd=tmp_path, trace=False)
    assert expected.returncode != 0 and done.returncode == expected.returncode
    assert 'error: expected a ";"' in done.stderr
    assert (done.stdout, done.stderr) == (expected.stdout, expected.stderr)  # nvcc ran it again, alone
    assert not (tmp_path / "bad.o").exists()
    # built again anyway (slim_header's narrower headers): the failing step's own words, no nvcc rerun
    done = front(nvcc, "-c", "bad.cu", "-o", "bad.o", cwd=tmp_path, retried=True)
    assert done.returncode != 0 and 'error: expected a ";"' in done.stderr
    assert "failed" in done.stderr and "plain nvcc" not in done.stderr


def test_what_it_does_not_handle_goes_to_nvcc_unchanged(tmp_path, nvcc):
    (tmp_path / "k.cu").write_text(SOURCE)
    done = front(nvcc, "-E", "k.cu", cwd=tmp_path)
    assert done.returncode == 0
    assert "[nvcc_parallel] plain nvcc: not a -c compile" in done.stderr
    assert done.stdout == plain(nvcc, "-E", "k.cu", cwd=tmp_path).stdout
    assert "scale" in done.stdout
    # a -c that asks nvcc for something else than the compile: only shows the steps
    done = front(nvcc, "-c", "k.cu", "-o", "k.o", "--dryrun", cwd=tmp_path)
    assert done.returncode == 0 and "[nvcc_parallel] plain nvcc: --dryrun is nvcc's to do" in done.stderr
    assert "#$ cudafe++" in done.stderr and not (tmp_path / "k.o").exists()


def test_torch_build_ninja_names_the_front_and_compiles_through_it(tmp_path, nvcc, monkeypatch):
    from torch.utils import cpp_extension

    if not cpp_extension.CUDA_HOME:  # torch without CUDA: its CUDA rules need the toolkit's folder
        monkeypatch.setattr(cpp_extension, "CUDA_HOME", "/usr/local/cuda")
        monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    monkeypatch.delenv("PYTORCH_NVCC", raising=False)
    monkeypatch.setenv(nvcc_front.TRACE_ENV, "1")
    (tmp_path / "k.cu").write_text(SOURCE)
    ninja = tmp_path / "build.ninja"

    def write_ninja_file(*_args):
        cpp_extension._write_ninja_file_to_build_library(str(ninja), "ext", [str(tmp_path / "k.cu")], [], [], [], [], [],
                                                         True, False, False)
        return os.environ.get("PYTORCH_NVCC")

    command = nvcc_front_install.with_parallel_nvcc(write_ninja_file)()
    assert "PYTORCH_NVCC" not in os.environ  # only while torch writes the build
    assert command == shlex.join([sys.executable, "-I", nvcc_front.__file__, cpp_extension._join_cuda_home("bin", "nvcc")])
    assert f"nvcc = {command}" in ninja.read_text().splitlines()
    done = subprocess.run(["ninja", "-C", str(tmp_path), "k.cuda.o"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[nvcc_parallel] cudafe++" in done.stdout and "plain nvcc" not in done.stdout
    assert "scale" in subprocess.run(["nm", "-C", str(tmp_path / "k.cuda.o")], capture_output=True, text=True).stdout

    monkeypatch.setenv("PYTORCH_NVCC", "ccache nvcc")  # an operator's or a bundle's own choice stays
    assert nvcc_front_install.with_parallel_nvcc(write_ninja_file)() == "ccache nvcc"


def test_install_wraps_torchs_builder_once_and_not_when_switched_off(monkeypatch):
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "_jit_compile", cpp_extension._jit_compile)  # put back after the test
    original = cpp_extension._jit_compile
    monkeypatch.setenv(nvcc_front_install.SWITCH_ENV, "0")
    nvcc_front_install.install()
    assert cpp_extension._jit_compile is original
    monkeypatch.delenv(nvcc_front_install.SWITCH_ENV, raising=False)  # on unless switched off
    nvcc_front_install.install()
    nvcc_front_install.install()
    assert cpp_extension._jit_compile is not original and cpp_extension._jit_compile.__wrapped__ is original
