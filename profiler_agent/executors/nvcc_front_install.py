"""Putting the nvcc front (nvcc_front.py) into a process's load_inline / load builds: torch's
PYTORCH_NVCC names it while a build runs. On unless PROFILER_AGENT_PARALLEL_NVCC is "0"."""

from __future__ import annotations

import functools
import os
import shlex
import sys

from profiler_agent.executors import nvcc_front

SWITCH_ENV = "PROFILER_AGENT_PARALLEL_NVCC"  # unset or "1": judged builds use the front; "0": nvcc itself


def torch_nvcc() -> str | None:
    """The nvcc torch's build.ninja would name, when it names nvcc alone (no ccache in front, no ROCm)."""
    from torch.utils import cpp_extension

    if getattr(cpp_extension, "IS_HIP_EXTENSION", False) or not cpp_extension.CUDA_HOME:
        return None
    nvcc = cpp_extension._join_cuda_home("bin", "nvcc")
    wrap = getattr(cpp_extension, "_wrap_compiler", lambda compiler: [compiler])
    return nvcc if wrap(nvcc) == [nvcc] and os.access(nvcc, os.X_OK) else None


def front_command(nvcc: str) -> str | None:
    """PYTORCH_NVCC's value: the front (nvcc_front.py) run by this interpreter (isolated: no PYTHONPATH, no script
    folder on sys.path), then the real nvcc. Stable from one process to the next (ninja compiles again
    when a command changes); None where build.ninja could not hold it as is."""
    parts = [sys.executable, "-I", os.path.abspath(nvcc_front.__file__), nvcc]
    return None if any(ch in part for part in parts for ch in "$\n") else shlex.join(parts)


def with_parallel_nvcc(compile_function):
    """`compile_function` (torch's _jit_compile) with PYTORCH_NVCC naming this front while it runs,
    unless PYTORCH_NVCC is set already (an operator's ccache, a bundle's own choice)."""

    @functools.wraps(compile_function)
    def compile_with_front(*args, **kwargs):
        if "PYTORCH_NVCC" in os.environ:
            return compile_function(*args, **kwargs)
        try:
            nvcc = torch_nvcc()
            command = front_command(nvcc) if nvcc else None
        except Exception:  # noqa: BLE001  (torch's internals moved: torch's own nvcc)
            command = None
        if command is None:
            return compile_function(*args, **kwargs)
        os.environ["PYTORCH_NVCC"] = command
        try:
            return compile_function(*args, **kwargs)
        finally:
            os.environ.pop("PYTORCH_NVCC", None)

    compile_with_front._profiler_agent_parallel_nvcc = True
    return compile_with_front


def install() -> None:
    """Make every load_inline / load build of this process compile its CUDA files through this front
    unless SWITCH_ENV is "0". On the H100 host the objects, symbols, SASS and dependency files are
    nvcc's own, and the example's .cu takes 16.1 s against 23.9 s (bench/results/nvcc-parallel/h100.log).
    The judged process, its self-test and the profiled process all do, so that they write the same
    build.ninja and find each other's builds."""
    if os.environ.get(SWITCH_ENV, "1") == "0":
        return
    from torch.utils import cpp_extension

    if not getattr(cpp_extension._jit_compile, "_profiler_agent_parallel_nvcc", False):
        cpp_extension._jit_compile = with_parallel_nvcc(cpp_extension._jit_compile)
