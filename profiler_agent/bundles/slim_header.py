"""A slimmer torch/extension.h for the CUDA files of a load_inline build, to cut its cold compile.

nvcc spends a bundle's cold build reading torch's headers three times over (cudafe++, cicc and the
host compiler each parse the whole translation unit): 51 s for examples/001-example on the H100
host, of which the kernels are milliseconds (bench/nvcc_stages.py). torch/extension.h pulls in
torch/all.h (nn, optim, autograd, serialization) and the Python bindings, which CUDA files of a
load_inline build do not use: load_inline writes the bindings into its own main.cpp.

So the CUDA files are compiled with `-I<folder>` (through NVCC_PREPEND_FLAGS) where torch/extension.h
holds torch/types.h alone (ATen, the torch:: tensor names, TORCH_CHECK); nvcc and GCC search -I
folders before torch's -isystem ones. 27.6 s instead of 51 s for the example. A file that needs more of torch fails to compile that
way; the build is then done again with the full header, so a bundle never fails because of this.
main.cpp (C++ flags) keeps the full header.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path

SLIM_EXTENSION_H = "#pragma once\n// profiler_agent.bundles.slim_header: torch/types.h alone, for CUDA files\n#include <torch/types.h>\n"


FOLDER_NAME = ".profiler-agent-slim-include"


def slim_include_folder(root: Path | None = None) -> Path:
    """The folder holding the slim torch/extension.h: under `root`, else beside the builds
    (TORCH_EXTENSIONS_DIR, the judged process's build folder). Its path and the header's mtime must
    not change between judgings: ninja's dependency file of each CUDA object names the header, and a
    header that moved or changed makes every later judging compile again."""
    if root is None:
        builds = os.environ.get("TORCH_EXTENSIONS_DIR")
        root = Path(builds) / FOLDER_NAME if builds else Path(tempfile.gettempdir()) / FOLDER_NAME
    root = Path(root)
    header = root / "torch" / "extension.h"
    if not header.is_file() or header.read_text() != SLIM_EXTENSION_H:  # written once: its mtime stays
        header.parent.mkdir(parents=True, exist_ok=True)
        staged = header.with_suffix(f".{os.getpid()}.tmp")
        staged.write_text(SLIM_EXTENSION_H)
        os.replace(staged, header)
    return root


PREPEND_ENV = "NVCC_PREPEND_FLAGS"  # nvcc reads it at each call; torch's build hash does not see it


def with_slim_header(compile_function, folder: Path):
    """`compile_function` (torch's _jit_compile) building CUDA files with the slim header first, and
    again with the full one if that fails. The folder goes through NVCC_PREPEND_FLAGS, not the build's
    flags: torch names a build by its sources and flags, so a process that loads it without this
    wrapper (the profiled process, a self-test) finds the same build instead of compiling anew."""

    @functools.wraps(compile_function)
    def compile_slim_first(name, sources, *args, **kwargs):
        if not any(str(source).endswith((".cu", ".cuh")) for source in sources):
            return compile_function(name, sources, *args, **kwargs)
        before = os.environ.get(PREPEND_ENV)
        os.environ[PREPEND_ENV] = " ".join(part for part in (f"-I{folder}", before) if part)
        try:
            return compile_function(name, sources, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001  (the full header decides; its error is the one reported)
            print(f"[profiler_agent] the CUDA files did not build with the slim torch/extension.h "
                  f"({type(exc).__name__}); building again with the full header", file=sys.stderr, flush=True)
        finally:
            if before is None:
                os.environ.pop(PREPEND_ENV, None)
            else:
                os.environ[PREPEND_ENV] = before
        return compile_function(name, sources, *args, **kwargs)

    compile_slim_first._profiler_agent_slim = True
    return compile_slim_first


def install(folder: Path | None = None) -> None:
    """Make every load_inline / load build of this process compile its CUDA files slim first."""
    from torch.utils import cpp_extension

    if getattr(cpp_extension._jit_compile, "_profiler_agent_slim", False):
        return
    cpp_extension._jit_compile = with_slim_header(cpp_extension._jit_compile, slim_include_folder(folder))
