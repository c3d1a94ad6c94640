"""NVIDIA devices through NVML (profiler_agent.devices.nvml): every reading the harness took before, unchanged."""

from __future__ import annotations

from profiler_agent.devices import nvml
from profiler_agent.devices.base import GpuFacts, Sample, gpu_inventory, pci_key


class NvidiaGpu:
    def __init__(self, handle):
        self.handle = handle

    def facts(self) -> GpuFacts:
        described = nvml.describe(self.handle)
        pci = nvml.call("nvmlDeviceGetPciInfo", self.handle)
        bus_id = getattr(pci, "busId", None)
        return GpuFacts(
            name=described["name"],
            uuid=described["uuid"],
            pci_bus_id=nvml.text(bus_id) if bus_id is not None else None,
            memory_bytes=described["memory_bytes"],
        )

    def peak_gbps(self) -> float | None:
        return nvml.peak_gbps(self.handle)

    def sample(self) -> Sample:
        nv = nvml.load()
        if nv is None:
            return Sample()
        sm_mhz = nvml.call("nvmlDeviceGetClockInfo", self.handle, nv.NVML_CLOCK_SM)
        mem_mhz = nvml.call("nvmlDeviceGetClockInfo", self.handle, nv.NVML_CLOCK_MEM)
        temperature = nvml.call("nvmlDeviceGetTemperature", self.handle, nv.NVML_TEMPERATURE_GPU)
        return Sample(
            power_w=nvml.power_w(self.handle),
            sm_clock_mhz=float(sm_mhz) if sm_mhz is not None else None,
            mem_clock_mhz=float(mem_mhz) if mem_mhz is not None else None,
            temperature_c=float(temperature) if temperature is not None else None,
            throttle_reasons=tuple(nvml.throttle_reasons(self.handle) or ()),
        )

    def energy_mj(self) -> float | None:
        millijoules = nvml.call("nvmlDeviceGetTotalEnergyConsumption", self.handle)
        return float(millijoules) if millijoules is not None else None


class NvidiaBackend:
    vendor = "nvidia"

    def sees_a_device(self) -> bool:
        return bool(nvml.visible_handles())

    def driver_version(self) -> str | None:
        return nvml.driver_version()

    def visible_gpus(self) -> list[NvidiaGpu]:
        return [NvidiaGpu(handle) for handle in nvml.visible_handles()]

    def gpu_for(self, uuid: str | None, pci_bus_id: str | None) -> NvidiaGpu | None:
        handle = nvml.handle_by_uuid(uuid)
        if handle is not None:
            return NvidiaGpu(handle)
        wanted = pci_key(pci_bus_id)
        if wanted is None:
            return None
        for gpu in self.visible_gpus():
            if pci_key(gpu.facts().pci_bus_id) == wanted:
                return gpu
        return None

    def inventory(self) -> list[dict]:
        return gpu_inventory(self.visible_gpus())
