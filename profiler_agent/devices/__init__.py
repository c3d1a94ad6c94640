"""Device backends: NVIDIA (NVML), MetaX (pymxsml or mx-smi) and CPU behind one interface (base.py).

The backend is chosen once per process: NVIDIA when NVML sees a device, else MetaX when pymxsml or
`mx-smi` lists one, else the CPU.
"""

from __future__ import annotations

import threading

from profiler_agent.devices.base import Backend, Gpu, GpuFacts, Sample, pci_key
from profiler_agent.devices.cpu import CpuBackend

__all__ = ["Backend", "CpuBackend", "Gpu", "GpuFacts", "Sample", "backend", "backend_for_kind", "detect", "pci_key"]

_chosen: list[Backend] = []
_lock = threading.Lock()


def detect() -> Backend:
    from profiler_agent.devices import metax, nvidia

    found = nvidia.NvidiaBackend()
    if found.sees_a_device():
        return found
    return metax.probe() or CpuBackend()


def backend() -> Backend:
    """The backend of this host, detected on first use and kept for the life of the process."""
    with _lock:
        if not _chosen:
            _chosen.append(detect())
        return _chosen[0]


def backend_for_kind(kind: str) -> Backend:
    """What answers for a judgement on `kind`: the CPU backend for "cpu", else the host's GPU backend."""
    return CpuBackend() if kind == "cpu" else backend()
