"""Optional NVML access through nvidia-ml-py: every helper answers None when NVML is missing or fails.

NVML reads the driver, not a CUDA context, so the RQ worker may call it before forking.
"""

from __future__ import annotations

import os

_loaded = {"tried": False, "module": None}

# bits of nvmlDeviceGetCurrentClocksEventReasons (older name: ...ThrottleReasons)
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def load():
    """The initialized pynvml module, or None."""
    if not _loaded["tried"]:
        _loaded["tried"] = True
        try:
            import pynvml

            pynvml.nvmlInit()
            _loaded["module"] = pynvml
        except Exception:
            _loaded["module"] = None
    return _loaded["module"]


def text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def call(name: str, *args):
    nv = load()
    if nv is None:
        return None
    try:
        return getattr(nv, name)(*args)
    except Exception:
        return None


def driver_version() -> str | None:
    version = call("nvmlSystemGetDriverVersion")
    return text(version) if version is not None else None


def handle_by_uuid(uuid: str | None):
    return call("nvmlDeviceGetHandleByUUID", uuid) if uuid else None


def visible_handles() -> list:
    """Handles of the GPUs this process may use: NVML ignores CUDA_VISIBLE_DEVICES, so apply it here."""
    count = call("nvmlDeviceGetCount")
    if not count:
        return []
    handles = [call("nvmlDeviceGetHandleByIndex", i) for i in range(count)]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return [h for h in handles if h is not None]
    chosen = []
    for item in (v.strip() for v in visible.split(",") if v.strip()):
        if item.isdigit():
            if int(item) < len(handles) and handles[int(item)] is not None:
                chosen.append(handles[int(item)])
        else:
            handle = handle_by_uuid(item if item.startswith(("GPU-", "MIG-")) else f"GPU-{item}")
            if handle is not None:
                chosen.append(handle)
    return chosen


def describe(handle) -> dict:
    memory = call("nvmlDeviceGetMemoryInfo", handle)
    name = call("nvmlDeviceGetName", handle)
    uuid = call("nvmlDeviceGetUUID", handle)
    return {
        "kind": "cuda",
        "name": text(name) if name is not None else None,
        "uuid": text(uuid) if uuid is not None else None,
        "memory_bytes": int(memory.total) if memory is not None else None,
    }


def peak_gbps(handle) -> float | None:
    """DRAM bandwidth from the bus width and the top memory clock (double data rate)."""
    nv = load()
    if nv is None or handle is None:
        return None
    bus_bits = call("nvmlDeviceGetMemoryBusWidth", handle)
    mem_mhz = call("nvmlDeviceGetMaxClockInfo", handle, nv.NVML_CLOCK_MEM)
    if not bus_bits or not mem_mhz:
        return None
    return bus_bits * mem_mhz * 1e6 * 2 / 8 / 1e9


def throttle_reasons(handle) -> list[str] | None:
    mask = call("nvmlDeviceGetCurrentClocksEventReasons", handle)
    if mask is None:
        mask = call("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    if mask is None:
        return None
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def power_w(handle) -> float | None:
    """Instantaneous board power where the driver offers it; else NVML's (averaged) power usage."""
    nv = load()
    if nv is None or handle is None:
        return None
    instant = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
    if instant is not None:
        values = call("nvmlDeviceGetFieldValues", handle, [instant])
        if values and values[0].nvmlReturn == 0:
            return values[0].value.uiVal / 1000.0
    milliwatts = call("nvmlDeviceGetPowerUsage", handle)
    return milliwatts / 1000.0 if milliwatts is not None else None
