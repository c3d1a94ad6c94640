"""A shared precompiled header of torch/extension.h, to cut the cold compile of load_inline's C++ file.

Where a build's time goes: load_inline writes main.cpp, which starts with `#include
<torch/extension.h>` (hundreds of thousands of lines of headers), and compiles it with g++; its CUDA
sources go to nvcc in parallel (ninja). Parsing the header is most of main.cpp's time: on this 2-core
host 73 s cold, 28 s with the header precompiled (examples/relu-cpu, -O3).

torch's own `load_inline(use_pch=True)` writes the .gch into torch's include folder, which judged
processes must not write (and where one contestant's header would serve the next). Here the agent,
outside the sandbox, builds one per set of flags into a folder of its own (`prepare`, or
`python -m profiler_agent prepare-pch`), and the judged process adds `-I<that folder>` to the C++
flags of its builds (`install`; only where one was prepared for exactly those flags). GCC looks for
`torch/extension.h.gch` in each include folder before the header itself, and uses it only when it
fits the compile (same compiler and options); otherwise the header linked beside it is read as usual,
so a stale or foreign .gch costs nothing but its time. GCC only (clang's PCH works differently).

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
import tempfile
from pathlib import Path

PCH_DIR_ENV = "PROFILER_AGENT_PCH_DIR"  # the folder of prepared headers, for the judged process
BUILD_TIMEOUT_S = 900
COMMON_FLAG_SETS = ([], ["-O3"], ["-O2"])  # what bundles pass as extra_cflags, most often


def torch_cflags(extra_cflags: list[str], with_cuda: bool) -> tuple[str, list[str]]:
    """(compiler, flags) torch's ninja file gives main.cpp for these extra_cflags, without
    -DTORCH_EXTENSION_NAME."""
    from torch.utils import cpp_extension

    with tempfile.TemporaryDirectory(prefix="pch-flags-") as folder:
        ninja = Path(folder) / "build.ninja"
        cpp_extension._write_ninja_file_to_build_library(
            str(ninja), "pch_probe", [str(Path(folder) / "main.cpp")], list(extra_cflags), [], [], [], [],
            with_cuda, False, False)
        lines = ninja.read_text().splitlines()
    value = lambda key: next(l.split("=", 1)[1].strip() for l in lines if l.startswith(key + " ="))  # noqa: E731
    flags = [f for f in shlex.split(value("cflags")) if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    return value("cxx"), flags + shlex.split(value("post_cflags"))


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


def pch_folder(root: Path, extra_cflags: list[str], with_cuda: bool) -> Path:
    """Where the header precompiled for these flags lies (whether or not it was built)."""
    compiler, flags = torch_cflags(extra_cflags, with_cuda)
    header = _header()
    identity = "\n".join([_compiler_identity(compiler), str(header), str(header.stat().st_mtime_ns), *flags])
    return Path(root) / hashlib.sha256(identity.encode()).hexdigest()[:16]


def prepare(root: Path, extra_cflags: list[str], with_cuda: bool) -> Path:
    """Build the precompiled header for these flags unless it is there; returns its folder."""
    folder = pch_folder(root, extra_cflags, with_cuda)
    if (folder / "torch" / "extension.h.gch").is_file():
        return folder
    compiler, flags = torch_cflags(extra_cflags, with_cuda)
    Path(root).mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)  # judged processes, another uid, read it
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        (staging / "torch").mkdir()
        # the header beside its .gch: what GCC reads when the .gch does not fit a compile
        (staging / "torch" / "extension.h").symlink_to(_header())
        subprocess.run([compiler, "-x", "c++-header", str(_header()), "-o", str(staging / "torch" / "extension.h.gch"),
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


def include_flags(root: Path | None, extra_cflags: list[str], with_cuda: bool) -> list[str]:
    """["-I<folder>", "-Winvalid-pch"] when a header was prepared for these flags under `root`, else []
    (the warning says in the compile log why GCC did not use it, if it did not)."""
    try:
        if root is None or not Path(root).is_dir():
            return []
        folder = pch_folder(root, extra_cflags, with_cuda)
        prepared = (folder / "torch" / "extension.h.gch").is_file()
    except Exception:  # torch's internals moved, or a folder this process may not read: build as usual
        return []
    return [f"-I{folder}", "-Winvalid-pch"] if prepared else []


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
        return original(name, sources, flags + include_flags(root, flags, bool(with_cuda)), *args, **kwargs)

    with_pch._profiler_agent_pch = True
    cpp_extension._jit_compile = with_pch
