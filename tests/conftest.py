"""Shared by every test package: one build cache for `load_inline`, so a bundle compiles once a session."""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session", autouse=True)
def shared_build_cache():
    # Kept under var/ so local reruns reuse builds; CI's fresh clone compiles each source once.
    cache = os.environ.setdefault("PROFILER_AGENT_CACHE_DIR", str(ROOT / "var" / "test-build-cache"))
    Path(cache).mkdir(parents=True, exist_ok=True)
    return cache
