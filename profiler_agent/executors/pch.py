"""A shared precompiled header of torch/extension.h, to cut the cold compile of load_inline's C++ file.

Where a build's time goes: load_inline writes main.cpp, which starts with `#include
<torch/extension.h>` (hundreds of thousands of lines of headers), and compiles it with g++; its CUDA
sources go to nvcc in parallel (ninja). Parsing the header is most of main.cpp's time: on this 2-core
host 73 s cold, 28 s with the header precompiled (examples/relu-cpu, -O3).

torch's own `load_inline(use_pch=True)` writes the .gch into torch's include folder, which judged
processes must not write (and where one contestant's header would serve the next). Here the agent,
outside the sandbox, builds one per set of flags into a folder of its own (`prepare`, or
`python -m profiler_agent prepare-pch`), and the judged process puts that folder in CPATH while it
builds (`install`; only where one was prepared for exactly those flags). GCC searches CPATH's folders
before torch's -isystem ones and looks for `torch/extension.h.gch` in each before the header itself,
using it only when it fits the compile (same compiler and options); otherwise the header linked beside
it is read as usual, so a stale or foreign .gch costs nothing but its time. GCC only (clang's PCH
works differently). The folder goes through the environment, not the flags: torch names a build by
its flags, and the header a build reads may change without renaming it (below).

Even precompiled, torch/extension.h costs main.cpp most of its time: GCC instantiates the templates
the header's inline functions use at the end of every file that includes it, PCH or not (19.5 s of
CPU on a 2-core host for a one-function binding). A build whose kernels are CUDA files has a main.cpp
that only declares and binds them, so its first try (slim_header's first tier, LEAN_MAIN_ENV) reads a
lean header, precompiled too: the tensor class, TORCH_CHECK, the torch:: dtype names and the Python
bindings' casters, without torch/all.h (6.5 s). A main.cpp that needs more fails to compile there and
is built again with the full header, as the CUDA files are with theirs.

The flags are torch's own: its ninja file for a dummy extension with the same extra_cflags, less
the extension's name (which the header does not use).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from profiler_agent.executors import slim_header

PCH_DIR_ENV = "PROFILER_AGENT_PCH_DIR"  # the folder of prepared headers, for the judged process
INCLUDE_ENV = "CPATH"  # GCC's -I folders from the environment, searched before torch's -isystem ones
BUILD_TIMEOUT_S = 900
COMMON_FLAG_SETS = ([], ["-O3"], ["-O2"])  # what bundles pass as extra_cflags, most often
FULL, LEAN = "full", "lean"
# What load_inline's main.cpp needs to bind functions declared in cpp_sources: the tensor class,
# TORCH_CHECK, torch's names for dtypes, pybind11 with torch's casters and wrap_pybind_function.
LEAN_EXTENSION_H = """#pragma once
// profiler_agent.executors.pch: main.cpp's lean torch/extension.h (no torch/all.h)
#define PROFILER_AGENT_LEAN_MAIN 1
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
"""


def lean_extension_h() -> str:
    return LEAN_EXTENSION_H + slim_header.tensor_names([])


def torch_cflags(extra_cflags: list[str], with_cuda: bool) -> tuple[str, list[str]]:
    """(compiler, flags) torch's ninja file gives main.cpp for these extra_cflags, without
    -DTORCH_EXTENSION_NAME."""
    compiler, flags = _torch_cflags(tuple(extra_cflags), with_cuda)
    return compiler, list(flags)


@functools.lru_cache(maxsize=None)  # asked for each header kind of each build: torch's answer does not change
def _torch_cflags(extra_cflags: tuple[str, ...], with_cuda: bool) -> tuple[str, tuple[str, ...]]:
    from torch.utils import cpp_extension

    with tempfile.TemporaryDirectory(prefix="pch-flags-") as folder:
        ninja = Path(folder) / "build.ninja"
        cpp_extension._write_ninja_file_to_build_library(
            str(ninja), "pch_probe", [str(Path(folder) / "main.cpp")], list(extra_cflags), [], [], [], [],
            with_cuda, False, False)
        lines = ninja.read_text().splitlines()
    value = lambda key: next(l.split("=", 1)[1].strip() for l in lines if l.startswith(key + " ="))  # noqa: E731
    flags = [f for f in shlex.split(value("cflags")) if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    return value("cxx"), tuple(flags + shlex.split(value("post_cflags")))


@functools.lru_cache(maxsize=None)
def _compiler_identity(compiler: str) -> str:
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30,
                              env={**os.environ, "LC_ALL": "C"})
        return f"{shutil.which(compiler)}\n{done.stdout}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{compiler}: {exc}"


def _header() -> Path:
    from torch.utils import cpp_extension

    return Path(cpp_extension._TORCH_PATH) / "include" / "torch" / "extension.h"


def pch_folder(root: Path, extra_cflags: list[str], with_cuda: bool, kind: str = FULL) -> Path:
    """Where the header (FULL: torch's, LEAN: lean_extension_h) precompiled for these flags lies,
    whether or not it was built."""
    compiler, flags = torch_cflags(extra_cflags, with_cuda)
    header = _header()
    identity = "\n".join([_compiler_identity(compiler), str(header), str(header.stat().st_mtime_ns), *flags,
                          *([lean_extension_h()] if kind == LEAN else [])])
    return Path(root) / hashlib.sha256(identity.encode()).hexdigest()[:16]


def prepare(root: Path, extra_cflags: list[str], with_cuda: bool, lean: bool | None = None) -> Path:
    """Build the precompiled header for these flags unless it is there, and the lean one too where `lean`
    (by default for CUDA builds, the only ones that ask for it); returns the full one's folder."""
    folder = _prepare(root, extra_cflags, with_cuda, FULL)
    if with_cuda if lean is None else lean:
        _prepare(root, extra_cflags, with_cuda, LEAN)
    return folder


def _prepare(root: Path, extra_cflags: list[str], with_cuda: bool, kind: str) -> Path:
    folder = pch_folder(root, extra_cflags, with_cuda, kind)
    if (folder / "torch" / "extension.h.gch").is_file():
        return folder
    compiler, flags = torch_cflags(extra_cflags, with_cuda)
    Path(root).mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)  # judged processes, another uid, read it
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        (staging / "torch").mkdir()
        header = staging / "torch" / "extension.h"  # what GCC reads when the .gch does not fit a compile
        if kind == LEAN:
            header.write_text(lean_extension_h())
            os.chmod(header, 0o644)
        else:
            header.symlink_to(_header())
        subprocess.run([compiler, "-x", "c++-header", str(header), "-o", str(staging / "torch" / "extension.h.gch"),
                        *flags], check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
        for path in (staging, staging / "torch"):
            os.chmod(path, 0o755)
        os.chmod(staging / "torch" / "extension.h.gch", 0o644)
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / "torch" / "extension.h.gch").is_file():  # another agent won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _prepared(root: Path, extra_cflags: list[str], with_cuda: bool, kind: str) -> Path | None:
    try:
        if root is None or not Path(root).is_dir():
            return None
        folder = pch_folder(root, extra_cflags, with_cuda, kind)
        return folder if (folder / "torch" / "extension.h.gch").is_file() else None
    except Exception:  # torch's internals moved, or a folder this process may not read: build as usual
        return None


def include_flags(root: Path | None, extra_cflags: list[str], with_cuda: bool) -> list[str]:
    """["-Winvalid-pch"] where a header was prepared for these flags under `root` (GCC then says in the
    compile log why it did not use it, if it did not), else []."""
    return ["-Winvalid-pch"] if _prepared(root, extra_cflags, with_cuda, FULL) else []


def include_path(root: Path | None, extra_cflags: list[str], with_cuda: bool, lean: bool) -> list[Path]:
    """The folders a build with these flags puts in CPATH: the lean header's first where `lean`, then
    the full one's; only those prepared. Absolute: ninja compiles in the build's folder, where a
    relative entry (a relative --cache-dir) would name nothing and GCC would parse torch's headers."""
    kinds = [LEAN, FULL] if lean else [FULL]
    return [folder.absolute() for kind in kinds if (folder := _prepared(root, extra_cflags, with_cuda, kind))]


def install(root: Path | None) -> None:
    """Make every load_inline / load build of this process use a prepared header where one fits."""
    if root is None:
        return
    from torch.utils import cpp_extension

    original = cpp_extension._jit_compile
    if getattr(original, "_profiler_agent_pch", False):
        return

    @functools.wraps(original)
    def with_pch(name, sources, extra_cflags, *args, **kwargs):
        with_cuda = args[6] if len(args) > 6 else kwargs.get("with_cuda")
        if with_cuda is None:
            with_cuda = any(map(cpp_extension._is_cuda_file, sources))
        flags = list(extra_cflags or [])
        folders = include_path(root, flags, bool(with_cuda), os.environ.get(slim_header.LEAN_MAIN_ENV) == "1")
        before = os.environ.get(INCLUDE_ENV)
        if folders:
            os.environ[INCLUDE_ENV] = os.pathsep.join([*map(str, folders), *([before] if before else [])])
            print(f"[profiler_agent] {name}: main.cpp looks for precompiled torch headers in "
                  f"{' then '.join(map(str, folders))}", file=sys.stderr, flush=True)
        try:
            return original(name, sources, flags + include_flags(root, flags, bool(with_cuda)), *args, **kwargs)
        finally:
            if before is None:
                os.environ.pop(INCLUDE_ENV, None)
            else:
                os.environ[INCLUDE_ENV] = before

    with_pch._profiler_agent_pch = True
    cpp_extension._jit_compile = with_pch
