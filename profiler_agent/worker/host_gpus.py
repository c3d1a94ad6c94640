"""The GPUs of this host and pinning a worker to one, through the device backend (NVML on NVIDIA,
pymxsml / mx-smi on MetaX): never a CUDA context, so the worker may still fork.

A worker is pinned by the GPU's UUID in CUDA_VISIBLE_DEVICES, not its index: CUDA numbers devices
fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, NVML in PCI order, so an index can name another GPU
to the judged process than to NVML. The judged child inherits the variable and sees that GPU alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

VISIBLE = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class HostGpu:
    index: int  # the management library's index (nvidia-smi's)
    uuid: str | None
    model: str | None
    memory_bytes: int | None
    driver: str | None

    def report(self) -> dict:
        """What a heartbeat says of the worker's GPU."""
        return {"index": self.index, "uuid": self.uuid, "model": self.model, "driver": self.driver,
                "memory_bytes": self.memory_bytes}


def host_gpus() -> list[HostGpu]:
    """Every GPU of the host, in the management library's order, whatever CUDA_VISIBLE_DEVICES says."""
    from profiler_agent import devices

    backend = devices.backend()
    if backend.vendor == "cpu":
        return []
    saved = os.environ.pop(VISIBLE, None)
    try:
        gpus = backend.visible_gpus()
    finally:
        if saved is not None:
            os.environ[VISIBLE] = saved
    driver = backend.driver_version()
    found = []
    for index, gpu in enumerate(gpus):
        facts = gpu.facts()
        found.append(HostGpu(index, facts.uuid, facts.name, facts.memory_bytes, driver))
    return found


def find(spec: str, gpus: list[HostGpu]) -> HostGpu:
    """The GPU named by an index ("1") or a UUID ("GPU-..."); ValueError naming the choices otherwise."""
    spec = spec.strip()
    for gpu in gpus:
        if (spec.isdigit() and int(spec) == gpu.index) or (gpu.uuid and spec in (gpu.uuid, gpu.uuid.removeprefix("GPU-"))):
            return gpu
    listed = ", ".join(f"{g.index} ({g.uuid})" for g in gpus) or "none"
    raise ValueError(f"no GPU {spec!r} on this host; its GPUs: {listed}")


def pin(gpu: HostGpu) -> None:
    """This process, and the judged processes it starts, see this GPU alone."""
    if not gpu.uuid:
        raise ValueError(f"GPU {gpu.index} reports no UUID: it cannot be pinned safely")
    os.environ[VISIBLE] = gpu.uuid


def parse_list(text: str) -> list[str]:
    """'0,1' or 'GPU-a,GPU-b' -> the items, duplicates refused."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError("no GPU named: give indexes or UUIDs, e.g. 0,1")
    if len(set(items)) != len(items):
        raise ValueError(f"a GPU is named twice in {text!r}")
    return items


def pinned() -> HostGpu | None:
    """The GPU this process is pinned to when it sees exactly one (e.g. CUDA_VISIBLE_DEVICES set by a
    unit file), else None."""
    from profiler_agent import devices

    backend = devices.backend()
    visible = backend.visible_gpus() if backend.vendor != "cpu" else []
    if len(visible) != 1:
        return None
    uuid = visible[0].facts().uuid
    return next((gpu for gpu in host_gpus() if gpu.uuid == uuid), None)
