"""Where load_inline builds go: one folder per candidate source, torch version and device kind.

Bundles reuse extension names (`name="relu"`), so builds of different submissions must never share a
folder; the same submission judged again finds its build and skips the compile.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from importlib import metadata
from pathlib import Path

CACHE_DIR_ENV = "PROFILER_AGENT_CACHE_DIR"


def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "gpu-codeforces" / "builds"


def torch_version() -> str:
    """The installed torch version, read without importing torch."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "unknown"


def extensions_dir(cache_dir: Path, source_file: Path, device_kind: str) -> Path:
    digest = hashlib.sha256()
    digest.update(Path(source_file).read_bytes())
    digest.update(b"\0" + torch_version().encode() + b"\0" + device_kind.encode())
    return Path(cache_dir) / digest.hexdigest()[:16]


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


STALE_TORCH_LOCK = "lock"  # torch.utils.cpp_extension's FileBaton: waits forever while it exists


@contextlib.contextmanager
def exclusive(build_dir: Path):
    """Hold the build folder for one judged process. The OS drops the flock when its holder dies,
    so a killed build never blocks the next; torch's own lock file left by a killed build is
    removed here, safe because no one else holds the folder."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(str(build_dir) + ".flock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        (build_dir / STALE_TORCH_LOCK).unlink(missing_ok=True)
        yield
