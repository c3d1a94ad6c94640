"""The `device` object of a result, filled in by the judged child (which owns the device)."""

from __future__ import annotations

from profiler_agent import host, nvml


def cuda_uuid(index: int = 0) -> str | None:
    import torch

    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else None


def describe_device(kind: str) -> dict:
    import torch

    device = {
        "kind": kind,
        "name": None,
        "uuid": None,
        "driver": None,
        "torch": torch.__version__,
        "peak_gbps": None,
        "peak_tflops": None,  # depends on dtype and unit (tensor cores or not): not guessed yet
    }
    if kind == "cpu":
        device["name"] = host.cpu_name()
        return device
    device["name"] = torch.cuda.get_device_name(0)
    device["uuid"] = cuda_uuid(0)
    handle = nvml.handle_by_uuid(device["uuid"])
    device["driver"] = nvml.driver_version()
    device["peak_gbps"] = nvml.peak_gbps(handle)
    return device


def describe_device_without_torch(kind: str) -> dict:
    """What the agent knows of the device when the judged child reported nothing (it died early).
    Uses NVML and /proc only: the agent process never initializes CUDA."""
    from profiler_agent.build_cache import torch_version

    device = {
        "kind": kind,
        "name": None,
        "uuid": None,
        "driver": None,
        "torch": torch_version(),
        "peak_gbps": None,
        "peak_tflops": None,
    }
    if kind == "cpu":
        device["name"] = host.cpu_name()
        return device
    handles = nvml.visible_handles()
    if handles:
        described = nvml.describe(handles[0])
        device["name"], device["uuid"] = described["name"], described["uuid"]
        device["peak_gbps"] = nvml.peak_gbps(handles[0])
    device["driver"] = nvml.driver_version()
    return device


def default_device_kind() -> str:
    """cuda when torch was built with CUDA and NVML sees a GPU, else cpu. Asks NVML, not the CUDA
    runtime, so the calling process stays free of a CUDA context (the RQ worker forks)."""
    from profiler_agent.build_cache import torch_version

    if "+cpu" in torch_version():
        return "cpu"
    if nvml.visible_handles():
        return "cuda"
    if nvml.load() is not None:
        return "cpu"  # NVML works and sees no GPU
    import os

    # no NVML binding installed: torch's NVML-based check, which also avoids initializing CUDA
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch

    return "cuda" if torch.version.cuda and torch.cuda.is_available() else "cpu"
