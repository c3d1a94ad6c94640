"""The `device` object of a result, filled in by the judged child (which owns the device), and the
device the child's telemetry samples. Vendor specifics live in profiler_agent.devices."""

from __future__ import annotations

from profiler_agent import devices
from profiler_agent.devices import host
from profiler_agent.devices import peaks


def cuda_uuid(index: int = 0) -> str | None:
    import torch

    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else None


def cuda_pci_bus_id(index: int = 0) -> str | None:
    """The device's PCI address as torch reports it ("0000:37:00.0"), or None where it does not."""
    import torch

    props = torch.cuda.get_device_properties(index)
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if any(part is None for part in parts):
        return None
    domain, bus, device = parts
    return f"{domain:04x}:{bus:02x}:{device:02x}.0"


def judged_gpu():
    """The backend's view of the CUDA device this process runs on (NVML or MetaX), or None."""
    return devices.backend().gpu_for(uuid=cuda_uuid(0), pci_bus_id=cuda_pci_bus_id(0))


def _empty_device(kind: str, torch_version: str | None) -> dict:
    return {
        "kind": kind,
        "name": None,
        "uuid": None,
        "driver": None,
        "torch": torch_version,
        "peak_gbps": None,
        "peak_tflops": None,  # depends on the reference's dtype: set by measure (peak_tflops below)
    }


def describe_device(kind: str) -> dict:
    import torch

    device = _empty_device(kind, torch.__version__)
    if kind == "cpu":
        device["name"] = host.cpu_name()
        return device
    device["name"] = torch.cuda.get_device_name(0)
    device["uuid"] = cuda_uuid(0)
    gpu = judged_gpu()
    device["driver"] = devices.backend().driver_version()
    device["peak_gbps"] = gpu.peak_gbps() if gpu is not None else None
    return device


def describe_device_without_torch(kind: str) -> dict:
    """What the agent knows of the device when the judged child reported nothing (it died early).
    Uses the device backend and /proc only: the agent process never initializes CUDA."""
    device = _empty_device(kind, host.torch_version())
    if kind == "cpu":
        device["name"] = host.cpu_name()
        return device
    backend = devices.backend()
    gpus = backend.visible_gpus()
    if gpus:
        facts = gpus[0].facts()
        device["name"], device["uuid"] = facts.name, facts.uuid
        device["peak_gbps"] = gpus[0].peak_gbps()
    device["driver"] = backend.driver_version()
    return device


def peak_tflops(device_name: str | None, tensors_seen: list, allow_tf32: bool) -> float | None:
    """Dense peak TFLOP/s of the device for the dtype the reference computes in (its floating-point
    inputs and outputs; fp32 counts as tf32 when the reference lets matmuls use TF32), or None."""
    return peaks.peak_tflops(device_name, peaks.flops_dtype(tensors_seen, allow_tf32))


def default_device_kind() -> str:
    """cuda when torch was built with CUDA (or MACA) and a GPU backend sees a device, else cpu. Asks
    NVML / MetaX's tools, not the CUDA runtime, so the calling process stays free of a CUDA context
    (the RQ worker forks)."""
    from profiler_agent.devices import nvml
    if "+cpu" in host.torch_version():
        return "cpu"
    if devices.backend().vendor in ("nvidia", "metax"):
        return "cuda"
    if nvml.load() is not None:
        return "cpu"  # NVML works and sees no GPU
    import os

    # no NVML binding installed: torch's NVML-based check, which also avoids initializing CUDA
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch

    return "cuda" if torch.version.cuda and torch.cuda.is_available() else "cpu"
