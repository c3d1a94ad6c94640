"""What the harness asks of a device, whatever its vendor: the interface every backend implements.

A `Backend` is the vendor's management library (NVML, MetaX SML / mx-smi, or nothing on a CPU host);
a `Gpu` is one device it manages. Every method answers None (or an empty value) for what the device
cannot tell, and never raises: telemetry must not fail a judgement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Sample:
    """One reading of a device during the timed region."""

    power_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class GpuFacts:
    """What identifies a device: its name as the vendor's tool reports it, UUID, PCI address, memory."""

    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_bytes: int | None = None


@runtime_checkable
class Gpu(Protocol):
    def facts(self) -> GpuFacts: ...

    def peak_gbps(self) -> float | None:
        """DRAM bandwidth the device can reach at most, GB/s."""

    def sample(self) -> Sample:
        """Power, clocks, temperature and throttle reasons now (fields the device lacks are None)."""

    def energy_mj(self) -> float | None:
        """The device's cumulative energy counter in millijoules, or None where it has none."""


@runtime_checkable
class Backend(Protocol):
    vendor: str  # "nvidia", "metax" or "cpu"

    def driver_version(self) -> str | None: ...

    def visible_gpus(self) -> list[Gpu]:
        """The devices this process may use (CUDA_VISIBLE_DEVICES applied where the tool ignores it)."""

    def gpu_for(self, uuid: str | None, pci_bus_id: str | None) -> Gpu | None:
        """The device the judged process runs on, found by the UUID or PCI address torch reports."""

    def inventory(self) -> list[dict]:
        """What a heartbeat tells the site: one {"kind", "name", "uuid", "memory_bytes"} per device."""


def gpu_inventory(gpus: list[Gpu]) -> list[dict]:
    rows = []
    for gpu in gpus:
        facts = gpu.facts()
        rows.append({"kind": "cuda", "name": facts.name, "uuid": facts.uuid, "memory_bytes": facts.memory_bytes})
    return rows


_PCI_ADDRESS = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


def pci_key(address: str | None) -> tuple[int, int, int, int] | None:
    """A PCI address as numbers, so "00000000:3B:00.0" (NVML) and "0000:3b:00.0" (mx-smi) compare equal."""
    match = _PCI_ADDRESS.match((address or "").strip())
    if not match:
        return None
    domain, bus, device, function = match.groups()
    return int(domain or "0", 16), int(bus, 16), int(device, 16), int(function)
