"""MetaX GPUs (C500 and kin): through pymxsml when importable, else by running `mx-smi`.

MACA's torch build shows these GPUs as CUDA devices, so a result's `device.kind` stays "cuda" there;
only the management library differs. Inside a sliced GPU (sGPU) torch reports the slice's UUID, which
`mx-smi -L` lists under its physical GPU; the PCI address matches too.
"""

from __future__ import annotations

import os

from profiler_agent.devices import mxsmi, peaks, pymxsml_source
from profiler_agent.devices.base import GpuFacts, Sample, gpu_inventory, pci_key

SAMPLE_TIMEOUT_S = 5.0  # one mx-smi reading; a hung one must not hold the timed region's end for long


class MxSmiSource:
    """Device facts and readings parsed from `mx-smi` output."""

    # each reading starts processes (about a second each on the recorded hosts): pause between them so
    # the sampler does not keep the host's CPUs busy while the timed region runs
    min_sample_interval_s = 0.5

    def __init__(self):
        self._devices: list[dict] | None = None
        self._table_text: str | None = None

    def devices(self) -> list[dict]:
        if self._devices is None:
            self._table_text = mxsmi.run([])
            table = mxsmi.parse_table(self._table_text)
            listed = {pci_key(gpu["bus_id"]): gpu for gpu in mxsmi.parse_list(mxsmi.run(["-L"]))}
            self._devices = []
            for row in table:
                also = listed.get(pci_key(row["bus_id"]), {})
                self._devices.append({
                    "index": row["index"],
                    "name": row["name"] or also.get("name"),
                    "uuid": also.get("uuid"),
                    "bus_id": row["bus_id"],
                    "memory_bytes": row["memory_total_bytes"],
                    "slice_uuids": also.get("slice_uuids", []),
                })
        return self._devices

    def driver_version(self) -> str | None:
        self.devices()
        return mxsmi.parse_header(self._table_text)["driver"]

    def sample(self, device: dict) -> Sample:
        target = ["-i", device["bus_id"]]
        details = mxsmi.parse_details(mxsmi.run(["--summary", *target], timeout_s=SAMPLE_TIMEOUT_S))
        reading = details[0] if details else {}
        if reading.get("power_w") is None and reading.get("temperature_c") is None:
            # an mx-smi without --summary: the plain table still has power and temperature
            table = mxsmi.parse_table(mxsmi.run(target, timeout_s=SAMPLE_TIMEOUT_S))
            reading = {**reading, **{k: v for k, v in (table[0] if table else {}).items() if v is not None}}
        reasons = mxsmi.parse_throttle_reasons(mxsmi.run(["--show-clk-tr", *target], timeout_s=SAMPLE_TIMEOUT_S))
        return Sample(
            power_w=reading.get("power_w"),
            sm_clock_mhz=reading.get("sm_clock_mhz"),
            mem_clock_mhz=reading.get("mem_clock_mhz"),
            temperature_c=reading.get("temperature_c"),
            throttle_reasons=tuple(reasons or ()),
        )


class PymxsmlDeviceSource:
    """pymxsml's readings keyed by the device dicts the backend hands around."""

    min_sample_interval_s = 0.0

    def __init__(self, source: pymxsml_source.PymxsmlSource):
        self._source = source
        self._devices: list[dict] | None = None

    def devices(self) -> list[dict]:
        if self._devices is None:
            self._devices = self._source.devices()
        return self._devices

    def driver_version(self) -> str | None:
        return self._source.driver_version()

    def sample(self, device: dict) -> Sample:
        return self._source.sample(device["index"])


class MetaxGpu:
    def __init__(self, source, device: dict):
        self._source = source
        self.device = device

    def facts(self) -> GpuFacts:
        d = self.device
        return GpuFacts(name=d["name"], uuid=d["uuid"], pci_bus_id=d["bus_id"], memory_bytes=d["memory_bytes"])

    @property
    def min_sample_interval_s(self) -> float:
        return self._source.min_sample_interval_s

    def peak_gbps(self) -> float | None:
        return peaks.peak_gbps_for(self.device["name"])

    def sample(self) -> Sample:
        try:
            return self._source.sample(self.device)
        except Exception:
            return Sample()

    def energy_mj(self) -> float | None:
        return None  # neither MXSML nor mx-smi offers an energy counter


class MetaxBackend:
    vendor = "metax"

    def __init__(self, source):
        self._source = source

    def driver_version(self) -> str | None:
        return self._source.driver_version()

    def _all_gpus(self) -> list[MetaxGpu]:
        return [MetaxGpu(self._source, device) for device in self._source.devices()]

    def visible_gpus(self) -> list[MetaxGpu]:
        gpus = self._all_gpus()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is None:
            return gpus
        chosen = []
        for item in (v.strip() for v in visible.split(",") if v.strip()):
            if item.isdigit():
                chosen += [gpu for gpu in gpus if gpu.device["index"] == int(item)]
            else:
                chosen += [gpu for gpu in gpus if item in (gpu.device["uuid"], *gpu.device["slice_uuids"])]
        return chosen

    def gpu_for(self, uuid: str | None, pci_bus_id: str | None) -> MetaxGpu | None:
        gpus = self._all_gpus()
        if uuid:
            bare = uuid.removeprefix("GPU-")
            for gpu in gpus:
                known = [gpu.device["uuid"], *gpu.device["slice_uuids"]]
                if any(u and u.removeprefix("GPU-") == bare for u in known):
                    return gpu
        wanted = pci_key(pci_bus_id)
        return next((gpu for gpu in gpus if wanted and pci_key(gpu.device["bus_id"]) == wanted), None)

    def inventory(self) -> list[dict]:
        return gpu_inventory(self.visible_gpus())


def probe() -> MetaxBackend | None:
    """The MetaX backend when pymxsml, or else mx-smi, lists at least one device; None otherwise."""
    module = pymxsml_source.load()
    if module is not None:
        source = PymxsmlDeviceSource(pymxsml_source.PymxsmlSource(module))
        if source.devices():
            return MetaxBackend(source)
    if mxsmi.executable() is not None:
        source = MxSmiSource()
        if source.devices():
            return MetaxBackend(source)
    return None
