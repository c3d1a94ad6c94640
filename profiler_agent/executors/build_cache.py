"""Where load_inline builds go: one folder per build key.

Bundles reuse extension names (`name="relu"`), so builds of different submissions must never share a
folder; the same submission judged again finds its build and skips the compile. The key covers all
a build can read or depend on: the candidate, every source file of its bundle (a header next to it
included), torch and its CUDA version, Python, the C++ compiler, and on CUDA nvcc,
TORCH_CUDA_ARCH_LIST and the GPU's compute capability (read through NVML: the agent never makes a
CUDA context, it forks RQ work-horses).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from profiler_agent.devices.host import torch_version
from profiler_agent.executors import orphaned_builds

CACHE_DIR_ENV = "PROFILER_AGENT_CACHE_DIR"


def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "gpu-codeforces" / "builds"


# What a build may read: Python that calls load_inline / load, and C, C++ and CUDA sources and headers.
SOURCE_SUFFIXES = (".py", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc")
PROBE_TIMEOUT_S = 30


def torch_cuda_version() -> str:
    """torch.version.cuda, read from torch/version.py without importing torch; "none" on CPU builds."""
    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            text = (Path(folder) / "version.py").read_text()
        except OSError:
            continue
        match = re.search(r"^cuda(?:\s*:[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, flags=re.MULTILINE)
        return match.group(1) if match else "none"
    return "unknown"


def _probe_path() -> str:
    """The PATH a judged process gets (child_env): the interpreter's folder first."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")])


def _version_output(program: str) -> str:
    """`program --version` as the build would meet it, or why it could not be run."""
    found = shutil.which(program, path=_probe_path())
    if found is None:
        return f"{program}: not found"
    try:
        completed = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
            env={"PATH": _probe_path(), "LC_ALL": "C"},  # gcc translates its banner
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{found}: {type(exc).__name__}"
    return f"{found}\n{completed.stdout}{completed.stderr}"


def _nvcc() -> str:
    """nvcc as torch.utils.cpp_extension finds it: CUDA_HOME or CUDA_PATH, PATH, /usr/local/cuda."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            return str(Path(os.environ[variable]) / "bin" / "nvcc")
    if shutil.which("nvcc", path=_probe_path()):
        return "nvcc"
    return "/usr/local/cuda/bin/nvcc"


def gpu_compute_capability() -> str:
    """The first visible GPU's compute capability from NVML (no CUDA context), or "unknown"."""
    from profiler_agent.devices import nvml

    handles = nvml.visible_handles()
    capability = nvml.call("nvmlDeviceGetCudaComputeCapability", handles[0]) if handles else None
    return f"{capability[0]}.{capability[1]}" if capability else "unknown"


@functools.lru_cache(maxsize=None)
def _toolchain(device_kind: str, environment: tuple) -> str:
    parts = [
        f"torch {torch_version()} cuda {torch_cuda_version()}",
        f"python {sys.version} {sys.implementation.cache_tag}",
        "c++: " + _version_output(os.environ.get("CXX") or "c++"),  # torch builds with $CXX, else c++
    ]
    if device_kind == "cuda":
        parts.append("nvcc: " + _version_output(_nvcc()))
        parts.append(f"TORCH_CUDA_ARCH_LIST={os.environ.get('TORCH_CUDA_ARCH_LIST', '')}")
        parts.append(f"compute capability {gpu_compute_capability()}")
    return "\n".join(parts)


def toolchain_fingerprint(device_kind: str) -> str:
    """Everything outside the bundle that shapes a build. It runs compilers, so it is cached per
    process, keyed by the environment it reads."""
    environment = tuple(os.environ.get(name, "") for name in (
        "PATH", "CXX", "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "CUDA_VISIBLE_DEVICES"))
    return _toolchain(device_kind, environment)


def bundle_sources(root: Path) -> list[Path]:
    """The files a build may read, in a stable order: every source under `root`, links left out."""
    found = [
        p for p in Path(root).rglob("*")
        if p.suffix.lower() in SOURCE_SUFFIXES and p.is_file() and not p.is_symlink()
        and "__pycache__" not in p.parts
    ]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def build_key(source_file: Path, device_kind: str, bundle_root: Path | None = None) -> str:
    """Hash of the candidate (by name and bytes), its bundle's sources and the toolchain."""
    source_file = Path(source_file)
    root = Path(bundle_root) if bundle_root is not None else source_file.parent
    digest = hashlib.sha256()

    def field(data: bytes) -> None:  # length-prefixed, so no two inputs run together
        digest.update(len(data).to_bytes(8, "little") + data)

    field(source_file.name.encode())
    field(source_file.read_bytes())
    for path in bundle_sources(root):
        field(path.relative_to(root).as_posix().encode())
        field(path.read_bytes())
    field(device_kind.encode())
    field(toolchain_fingerprint(device_kind).encode())
    return digest.hexdigest()


def extensions_dir(cache_dir: Path, source_file: Path, device_kind: str, bundle_root: Path | None = None) -> Path:
    """The build folder of `source_file` (its bundle: the folder it is in, unless given)."""
    return Path(cache_dir) / build_key(source_file, device_kind, bundle_root)[:16]


def reachable_cache_dir(cache_dir: Path, user) -> Path:
    """Where builds go for `user`: the cache itself, or, when judged processes run as another uid
    that cannot pass through the cache's folders, a stable stand-in under the temp folder (stable,
    so ninja finds its earlier build: build.ninja holds absolute paths)."""
    if user is None:
        return Path(cache_dir)
    key = hashlib.sha256(str(Path(cache_dir).resolve()).encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"profiler-agent-builds-{user.uid}"
    root.mkdir(mode=0o711, exist_ok=True)
    os.chmod(root, 0o711)  # others may pass through, not list: build folders are found by key only
    return root / key


def pch_root(cache_dir: Path) -> Path:
    """The agent's precompiled headers (profiler_agent.executors.pch): beside the builds, written by the
    agent only, read by judged processes."""
    return Path(cache_dir) / "pch"


STALE_TORCH_LOCK = "lock"  # torch.utils.cpp_extension's FileBaton: waits forever while it exists


@contextlib.contextmanager
def exclusive(build_dir: Path):
    """Hold the build folder for one judged process. The OS drops the flock when its holder dies,
    so a killed build never blocks the next; what a killed build leaves is cleared here, safe because
    no one else holds the folder: its ninja and compilers, still running (orphaned_builds), and torch's
    lock files (one in each extension's folder, `<build_dir>/<name>/lock`)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(str(build_dir) + ".flock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        orphaned_builds.end_in(build_dir)
        for stale in [build_dir / STALE_TORCH_LOCK, *build_dir.glob(f"*/{STALE_TORCH_LOCK}")]:
            stale.unlink(missing_ok=True)
        yield


# Failed builds are kept too, under the same key: the same sources and toolchain fail the same way,
# so a later judging reports the stored compile error at once instead of compiling for seconds again.
FAILURES_DIR = "failed-builds"
BUILD_FAILED = "Error building extension"  # torch.utils.cpp_extension's message when ninja fails
# A build that failed for these reasons may pass next time: the host's fault, not the code's.
NOT_THE_CODES_FAULT = (
    "signal terminated program",  # gcc/nvcc: a compiler process was killed (the OOM killer, a limit)
    "internal compiler error: Killed",
    "Killed",  # the shell's word for a SIGKILLed command
    "virtual memory exhausted", "out of memory", "Cannot allocate memory", "std::bad_alloc",
    "No space left on device", "Disk quota exceeded",
    "Resource temporarily unavailable",  # fork refused (the process limit)
    "Segmentation fault", "internal compiler error",  # a compiler crash: not the code's to answer for
    "Too many open files", "Read-only file system", "Permission denied",
)


def build_failed_by_the_code(error: dict | None, compile_log: str, ended_normally: bool) -> tuple[bool, str]:
    """Whether a failed build is the code's fault, and why (or why not). Only a build that the
    compiler itself refused counts: the judged process ended by itself (no timeout, no kill, no
    memory limit) and reported torch's "Error building extension", and neither its message nor the
    compile log tells of a killed or starved compiler."""
    if not ended_normally:
        return False, "the build was killed or timed out"
    message = (error or {}).get("message", "")
    if (error or {}).get("origin") != "submission" or BUILD_FAILED not in message:
        return False, "not a compiler's refusal"
    for sign in NOT_THE_CODES_FAULT:
        if sign in message or sign in compile_log:
            return False, f"the build log says {sign!r}"
    return True, "the compiler refused the code"


def _failure_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / FAILURES_DIR / f"{key}.json"


def record_failure(cache_dir: Path, key: str, compile_log: str, error: dict) -> None:
    """Keep a failed build's log and error under its key (written whole, then renamed into place)."""
    import json
    import time

    path = _failure_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"key": key, "failed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "compile_log": compile_log,
              "error": {k: error.get(k) for k in ("origin", "stage", "type", "message")}}
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
        json.dump(record, handle)
    os.replace(handle.name, path)


def cached_failure(cache_dir: Path, key: str) -> dict | None:
    """The stored failure of this build key, or None (a record that cannot be read counts as none)."""
    import json

    try:
        record = json.loads(_failure_path(cache_dir, key).read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(record, dict) and isinstance(record.get("compile_log"), str)
            and isinstance(record.get("error"), dict)):
        return None
    return record
