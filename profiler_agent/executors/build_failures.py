"""A load_inline / load build that the compiler refused is not compiled again.

A candidate whose own extension fails to build, and which then falls back to torch, used to compile
it at every judging, in the judged process and again in the profiled one, three times each (the
narrow, slim and full torch headers: slim_header.py): 43-86 s of a judging on the H100 for nothing.
The same sources, flags, headers and toolchain fail the same way, so the refusal is kept beside the
build (in its build directory: one per build key, build_cache.py) and raised again at once, with
torch's own message, to whichever process asks for the same build. Each header fallback is its own
build (NVCC_PREPEND_FLAGS and CPATH are in the key), so each is tried once per build key.

Only the compiler's refusal is kept (torch's "Error building extension" without a sign of a killed
or starved compiler: build_cache.NOT_THE_CODES_FAULT); a build the host failed is tried again.
"""
import functools
import hashlib
import inspect
import json
import os
import sys
import tempfile
from pathlib import Path

from profiler_agent.executors.build_cache import BUILD_FAILED, NOT_THE_CODES_FAULT

RECORDS_FOLDER = ".refused-builds"
# What a build's key leaves out: where its messages go, not what it builds.
NOT_IN_THE_KEY = ("verbose", "keep_intermediates", "build_directory")
# Environment that changes what nvcc or the C++ compiler is given (slim_header, nvcc_front, torch).
ENVIRONMENT_IN_THE_KEY = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "PYTORCH_NVCC", "CXX", "TORCH_CUDA_ARCH_LIST",
                          "CUDA_HOME", "CUDA_PATH", "CPATH", "CPLUS_INCLUDE_PATH")


def build_key(arguments: dict) -> str:
    """A digest of what a build is made of: every argument of torch's _jit_compile but where its output
    goes, the sources' contents, and the environment its compilers read."""
    digest = hashlib.sha256()

    def field(label: str, data: bytes) -> None:  # length-prefixed: no two inputs run together
        digest.update(f"{label}:{len(data)}:".encode() + data)

    for name, value in sorted(arguments.items()):
        if name in NOT_IN_THE_KEY:
            continue
        field(name, repr(value).encode())
    for source in arguments.get("sources") or []:
        try:
            field("source", Path(source).read_bytes())
        except OSError:
            field("unreadable source", str(source).encode())
    for name in ENVIRONMENT_IN_THE_KEY:
        field(name, os.environ.get(name, "").encode())
    return digest.hexdigest()[:32]


def refused_by_the_compiler(message: str) -> bool:
    return BUILD_FAILED in message and not any(sign in message for sign in NOT_THE_CODES_FAULT)


def _record_path(build_directory: str, key: str) -> Path:
    return Path(build_directory) / RECORDS_FOLDER / f"{key}.json"


def _kept_refusal(build_directory: str, key: str) -> str | None:
    try:
        record = json.loads(_record_path(build_directory, key).read_text())
    except (OSError, ValueError):
        return None
    message = record.get("message") if isinstance(record, dict) else None
    return message if isinstance(message, str) and refused_by_the_compiler(message) else None


def _keep_refusal(build_directory: str, key: str, message: str) -> None:
    path = _record_path(build_directory, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
            json.dump({"message": message}, handle)
        os.replace(handle.name, path)
    except OSError:  # a build folder that cannot be written: the next judging compiles again
        pass


def with_refusals_kept(compile_function):
    """`compile_function` (torch's _jit_compile) that raises a kept refusal of the same build at once."""
    signature = inspect.signature(compile_function)

    @functools.wraps(compile_function)
    def compile_unless_refused(*args, **kwargs):
        try:
            arguments = signature.bind(*args, **kwargs).arguments
        except TypeError:
            return compile_function(*args, **kwargs)
        build_directory = arguments.get("build_directory")
        if not build_directory:
            return compile_function(*args, **kwargs)
        key = build_key(arguments)
        kept = _kept_refusal(build_directory, key)
        if kept is not None:
            print(f"[profiler_agent] {arguments.get('name')}: this build was refused by the compiler before "
                  "(same sources, flags and toolchain); not compiled again", file=sys.stderr, flush=True)
            raise RuntimeError(kept)
        try:
            return compile_function(*args, **kwargs)
        except RuntimeError as exc:
            if refused_by_the_compiler(str(exc)):
                _keep_refusal(build_directory, key, str(exc))
            raise

    compile_unless_refused._profiler_agent_refusals = True
    return compile_unless_refused


def install() -> None:
    """Keep the compiler's refusals of every load_inline / load build of this process. Installed before
    the other build hooks (pch, slim headers, nvcc front), so it sees the flags and headers they add."""
    from torch.utils import cpp_extension

    if getattr(cpp_extension._jit_compile, "_profiler_agent_refusals", False):
        return
    cpp_extension._jit_compile = with_refusals_kept(cpp_extension._jit_compile)
