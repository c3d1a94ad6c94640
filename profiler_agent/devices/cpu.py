"""The CPU "device": a name from /proc/cpuinfo and memory from /proc/meminfo; nothing to sample."""

from __future__ import annotations

from profiler_agent.devices import host


class CpuBackend:
    vendor = "cpu"

    def driver_version(self) -> str | None:
        return None

    def visible_gpus(self) -> list:
        return []

    def gpu_for(self, uuid: str | None, pci_bus_id: str | None) -> None:
        return None

    def inventory(self) -> list[dict]:
        return [{"kind": "cpu", "name": host.cpu_name(), "uuid": None, "memory_bytes": host.memory_total_bytes()}]
