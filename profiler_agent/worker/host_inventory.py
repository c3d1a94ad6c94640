"""What an agent tells the site about itself in heartbeats: its devices and software versions."""

from __future__ import annotations

import platform

import profiler_agent
from profiler_agent.devices import host
from profiler_agent import devices


def devices_of(kind: str) -> list[dict]:
    """One {"kind", "name", "uuid", "memory_bytes"} per device this agent judges on (NVML, MetaX or CPU)."""
    return devices.backend_for_kind(kind).inventory()


def versions() -> dict:
    return {
        "agent": profiler_agent.__version__,
        "harness": profiler_agent.HARNESS_VERSION,
        "torch": host.torch_version(),
        "python": platform.python_version(),
        "driver": devices.backend().driver_version(),
    }
