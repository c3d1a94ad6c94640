"""The environment of a judged process: built from an allowlist, so agent secrets never reach it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import profiler_agent

# Copied from the agent's environment when set. Nothing else is: no token, no site URL, no Redis URL.
ALLOWED = (
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "MACA_VISIBLE_DEVICES",  # MetaX hosts pin a worker's GPU with this one
    "MACA_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "TORCH_CUDA_ARCH_LIST",
    "LD_LIBRARY_PATH",
    "CC",
    "CXX",
    "MAX_JOBS",
    "OMP_NUM_THREADS",
    # the nvcc front of judged builds (executors.nvcc_front): "0" turns it off; the largest source
    # (MB preprocessed) whose two front ends run at once
    "PROFILER_AGENT_PARALLEL_NVCC",
    "PROFILER_AGENT_NVCC_SIDE_BY_SIDE_MAX_MB",
    # NVLink multicast switches some GPU hosts require to stay set for every program
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
)


def package_root() -> str:
    """The folder holding the profiler_agent package, so the child can import it from any cwd."""
    return str(Path(profiler_agent.__file__).resolve().parent.parent)


def child_env(home: Path, tmpdir: Path, extensions_dir: Path | None, pch_dir: Path | None = None) -> dict[str, str]:
    env = {key: os.environ[key] for key in ALLOWED if key in os.environ}
    # the interpreter's own bin folder first: ninja (for load_inline) lives there in a venv
    path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    env["HOME"] = str(home)
    env["TMPDIR"] = str(tmpdir)
    # the agent's own PYTHONPATH (not secret) after the package, for agents installed that way
    env["PYTHONPATH"] = os.pathsep.join(p for p in [package_root(), os.environ.get("PYTHONPATH")] if p)
    env["PYTHONUNBUFFERED"] = "1"  # prints reach the log file even if the child is killed
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extensions_dir is not None:
        env["TORCH_EXTENSIONS_DIR"] = str(extensions_dir)
    if pch_dir is not None and pch_dir.is_dir():
        env["PROFILER_AGENT_PCH_DIR"] = str(pch_dir)  # read-only precompiled headers (executors.pch)
    return env
