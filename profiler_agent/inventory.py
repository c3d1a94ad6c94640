"""What an agent tells the site about itself in heartbeats: its devices and software versions."""

from __future__ import annotations

import platform

import profiler_agent
from profiler_agent import build_cache, host, nvml


def devices(kind: str) -> list[dict]:
    if kind == "cuda":
        return [nvml.describe(handle) for handle in nvml.visible_handles()]
    return [{"kind": "cpu", "name": host.cpu_name(), "uuid": None, "memory_bytes": host.memory_total_bytes()}]


def versions() -> dict:
    return {
        "agent": profiler_agent.__version__,
        "torch": build_cache.torch_version(),
        "python": platform.python_version(),
        "driver": nvml.driver_version(),
    }
