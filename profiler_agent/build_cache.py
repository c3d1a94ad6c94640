"""Where load_inline builds go: one folder per candidate source, torch version and device kind.

Bundles reuse extension names (`name="relu"`), so builds of different submissions must never share a
folder; the same submission judged again finds its build and skips the compile.
"""

from __future__ import annotations

import hashlib
import os
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
