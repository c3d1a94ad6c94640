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

Narrower still is tried first: torch/types.h itself (which load_inline's generated .cu includes first)
holding the tensor class, TORCH_CHECK, the torch:: dtype names and the declarations of exactly the
ATen ops the CUDA sources name (`torch::empty_like`, `at::zeros`...): no ATen/ATen.h and its thousands of op
declarations. 24.6 s against 44.3 s for the slim header and 81.8 s for the default, all at once on
the H100 host (bench/nvcc_stages.py). A source that needs more fails there and builds with the slim
header, then the full one: each step only costs a failed parse.

Narrowest, and tried before all of them, are the sliced headers (sliced_header): the narrow
torch/types.h over a tensor class holding only the methods the sources name, op headers without
ATen's context and a light ATen/cuda/CUDAContext.h. With them, main.cpp reads a lean precompiled
header of its own where the agent prepared one (pch.py); the later tiers give it torch's full header.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

from profiler_agent.executors import sliced_header
from profiler_agent.executors.nvcc_front import RETRIED_ENV

LEAN_MAIN_ENV = "PROFILER_AGENT_LEAN_MAIN"  # "1" in the first tier: main.cpp reads pch's lean header

SLIM_EXTENSION_H = "#pragma once\n// profiler_agent.executors.slim_header: torch/types.h alone, for CUDA files\n#include <torch/types.h>\n"


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
    _write_once(root / "torch" / "extension.h", SLIM_EXTENSION_H)
    return root


NARROW_FOLDER_NAME = ".profiler-agent-narrow-include"
QUALIFIED_NAME = re.compile(r"\b(?:torch|at)::(\w+)")
# torch/types.h's own names beside `using namespace at`
DTYPE_ALIASES = (("kUInt8", "at::kByte"), ("kInt8", "at::kChar"), ("kInt16", "at::kShort"), ("kInt32", "at::kInt"),
                 ("kInt64", "at::kLong"), ("kUInt16", "at::kUInt16"), ("kUInt32", "at::kUInt32"),
                 ("kUInt64", "at::kUInt64"), ("kFloat16", "at::kHalf"), ("kFloat32", "at::kFloat"),
                 ("kFloat64", "at::kDouble"), ("kU8", "kUInt8"), ("kU16", "kUInt16"), ("kU32", "kUInt32"),
                 ("kU64", "kUInt64"), ("kI8", "kInt8"), ("kI16", "kInt16"), ("kI32", "kInt32"), ("kI64", "kInt64"),
                 ("kF16", "kFloat16"), ("kF32", "kFloat32"), ("kF64", "kFloat64"))


def ops_named(sources, ops_folder: Path) -> list[str]:
    """The ATen ops the CUDA sources name as torch::X or at::X that have a header of their own."""
    names: set[str] = set()
    for source in sources:
        if str(source).endswith((".cu", ".cuh")):
            try:
                names.update(QUALIFIED_NAME.findall(Path(source).read_text(errors="replace")))
            except OSError:
                continue
    return sorted(name for name in names if (ops_folder / f"{name}.h").is_file())


def tensor_names(ops: list[str]) -> str:
    """The tensor class, TORCH_CHECK, torch's dtype names and the declarations of `ops` (also the lean
    main.cpp header's, pch.py)."""
    lines = ["#include <optional>", "#include <ATen/core/Tensor.h>", "#include <c10/util/Exception.h>",
             *(f"#include <ATen/ops/{op}.h>" for op in ops),
             "namespace torch {", "using namespace at;", "using Dtype = at::ScalarType;",
             *(f"constexpr auto {name} = {value};" for name, value in DTYPE_ALIASES), "}  // namespace torch", ""]
    return "\n".join(lines)


def narrow_types_h(ops: list[str]) -> str:
    return ("#pragma once\n// profiler_agent.executors.slim_header: the tensor class and the ops this build names\n"
            + tensor_names(ops))


def _write_once(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:  # written once: its mtime stays (see above)
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_suffix(f".{os.getpid()}.tmp")
        staged.write_text(text)
        os.replace(staged, path)


def narrow_include_folder(root: Path, ops: list[str]) -> Path:
    """A folder whose torch/types.h and torch/extension.h are narrow_types_h(ops), named by its
    content: builds that name other ops (in the same build root) never rewrite it."""
    text = narrow_types_h(ops)
    folder = Path(root) / hashlib.sha256(text.encode()).hexdigest()[:16]
    _write_once(folder / "torch" / "types.h", text)
    _write_once(folder / "torch" / "extension.h", "#pragma once\n#include <torch/types.h>\n")
    return folder


SLICED_FOLDER_NAME = ".profiler-agent-sliced-include"


def sliced_include_folder(root: Path, sources, ops: list[str], include_root: Path) -> Path | None:
    """A folder holding the sliced headers for `sources` naming `ops`, named by its content; None
    where this torch's headers cannot be sliced (the build goes on with the narrow ones)."""
    try:
        files = sliced_header.sliced_files(include_root, sliced_header.source_words(sources), ops)
    except sliced_header.Unsliceable as exc:
        print(f"[profiler_agent] no sliced torch headers here ({exc})", file=sys.stderr, flush=True)
        return None
    files["torch/types.h"] = narrow_types_h(ops)
    files["torch/extension.h"] = "#pragma once\n#include <torch/types.h>\n"
    folder = Path(root) / sliced_header.folder_name(files)
    for path, text in files.items():
        _write_once(folder / path, text)
    return folder


def aten_ops_folder() -> Path:
    from torch.utils import cpp_extension

    return Path(cpp_extension.include_paths()[0]) / "ATen" / "ops"


def _versions_before(name: str):
    """A function putting torch's record of the build `name` back as it is now. _jit_compile records a
    build's sources and flags before building and, called again with the same ones, skips the build
    and imports: after a failed attempt the retry would import a library that was never made."""
    from torch.utils import cpp_extension

    entries = cpp_extension.JIT_EXTENSION_VERSIONER.entries
    saved = entries.get(name)

    def put_back() -> None:
        if saved is None:
            entries.pop(name, None)
        else:
            entries[name] = saved

    return put_back


PREPEND_ENV = "NVCC_PREPEND_FLAGS"  # nvcc reads it at each call; torch's build hash does not see it


def with_slim_header(compile_function, folder: Path, narrow_root: Path | None = None, ops_folder: Path | None = None):
    """`compile_function` (torch's _jit_compile) building CUDA files with the sliced headers first, then
    the narrow one, the slim one and the full one. The folders go through NVCC_PREPEND_FLAGS, not the build's
    flags: torch names a build by its sources and flags, so a process that loads it without this
    wrapper (the profiled process, a self-test) finds the same build instead of compiling anew."""
    narrow_root = Path(narrow_root) if narrow_root is not None else Path(folder).parent / NARROW_FOLDER_NAME
    sliced_root = narrow_root.parent / SLICED_FOLDER_NAME

    @functools.wraps(compile_function)
    def compile_slim_first(name, sources, *args, **kwargs):
        if not any(str(source).endswith((".cu", ".cuh")) for source in sources):
            return compile_function(name, sources, *args, **kwargs)
        ops_root = ops_folder if ops_folder is not None else aten_ops_folder()
        ops = ops_named(sources, ops_root)
        tiers = [("sliced", sliced_include_folder(sliced_root, sources, ops, Path(ops_root).parent.parent)),
                 ("narrow", narrow_include_folder(narrow_root, ops)), ("slim", folder)]
        tiers = [(label, include) for label, include in tiers if include is not None]
        for (label, include), after in zip(tiers, [*(label for label, _ in tiers[1:]), "full"]):
            before = os.environ.get(PREPEND_ENV)
            os.environ[PREPEND_ENV] = " ".join(part for part in (f"-I{include}", before) if part)
            os.environ[RETRIED_ENV] = "1"  # the nvcc front: a failure here is built again, no nvcc rerun
            if label == tiers[0][0]:
                os.environ[LEAN_MAIN_ENV] = "1"
            versions = _versions_before(name)
            try:
                return compile_function(name, sources, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001  (the full header decides; its error is the one reported)
                versions()  # else torch takes the failed attempt for a build and skips the next one
                print(f"[profiler_agent] the CUDA files did not build with the {label} torch headers "
                      f"({type(exc).__name__}); building again with the {after} ones", file=sys.stderr, flush=True)
            finally:
                os.environ.pop(RETRIED_ENV, None)
                os.environ.pop(LEAN_MAIN_ENV, None)
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
