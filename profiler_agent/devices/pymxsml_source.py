"""MetaX devices through pymxsml, MetaX's Python binding of its management library (libmxsml).

pymxsml ships with the MACA SDK (`pip install /opt/maca/share/mxsml/pymxsml-*.whl`). Its functions take
a device index. Units, from MetaX's MxSml.h (MXSML 2.3.1): memory in KB, board power per supply "way"
in mW, temperature in hundredths of a degree C, clocks in MHz. No energy counter is offered.
"""

from __future__ import annotations

from profiler_agent.devices.base import Sample

# documented values of pymxsml's constants, for bindings that lack the name
_DEFAULTS = {"MXSML_VERSION_DRIVER": 1, "MXSML_TEMPERATURE_HOTSPOT": 0, "MXSML_CLOCK_MC0": 3, "MXSML_CLOCK_XCORE": 11}

# bits of mxSmlGetCurrentClocksThrottleReason (MxSml.h, mxsmlClocksThrottleReasons)
THROTTLE_REASONS = {
    0x1: "idle",
    0x2: "applications_limit",
    0x4: "over_power",
    0x8: "chip_over_temperature",
    0x10: "vr_over_temperature",
    0x20: "hbm_over_temperature",
    0x40: "thermal_over_temperature",
    0x80: "pcc",
    0x100: "power_brake",
    0x200: "didt",
    0x400: "low_usage",  # "utilization dynamic modulation"; mx-smi prints it as "Low Usage"
    0x80000000: "other",
}


def load():
    """The initialized pymxsml module, or None when it is not importable or finds no library."""
    try:
        import pymxsml

        pymxsml.mxSmlInit()
        return pymxsml
    except Exception:
        return None


class PymxsmlSource:
    def __init__(self, module):
        self._sml = module

    def _call(self, name: str, *args):
        try:
            return getattr(self._sml, name)(*args)
        except Exception:
            return None

    def _constant(self, name: str) -> int:
        return getattr(self._sml, name, _DEFAULTS[name])

    def devices(self) -> list[dict]:
        found = []
        for index in range(self._call("mxSmlGetDeviceCount") or 0):
            info = self._call("mxSmlGetDeviceInfo", index)
            memory = self._call("mxSmlGetMemoryInfo", index)
            total_kb = getattr(memory, "vramTotal", None)
            found.append({
                "index": index,
                "name": _text(getattr(info, "deviceName", None)),
                "uuid": _text(getattr(info, "uuid", None)),
                "bus_id": _text(getattr(info, "bdfId", None)),
                "memory_bytes": int(total_kb) * 1024 if total_kb else None,
                "slice_uuids": [],
            })
        return found

    def driver_version(self) -> str | None:
        return _text(self._call("mxSmlGetDeviceVersion", 0, self._constant("MXSML_VERSION_DRIVER")))

    def sample(self, index: int) -> Sample:
        ways = self._call("mxSmlGetBoardPowerInfo", index)
        milliwatts = [getattr(way, "power", None) for way in ways or []]
        hundredths = self._call("mxSmlGetTemperatureInfo", index, self._constant("MXSML_TEMPERATURE_HOTSPOT"))
        mask = self._call("mxSmlGetCurrentClocksThrottleReason", index)
        return Sample(
            power_w=sum(milliwatts) / 1000.0 if milliwatts and None not in milliwatts else None,
            sm_clock_mhz=self._clock(index, "MXSML_CLOCK_XCORE"),
            mem_clock_mhz=self._clock(index, "MXSML_CLOCK_MC0"),
            temperature_c=hundredths / 100.0 if isinstance(hundredths, (int, float)) else None,
            throttle_reasons=tuple(name for bit, name in THROTTLE_REASONS.items() if mask and mask & bit),
        )

    def _clock(self, index: int, clock_name: str) -> float | None:
        clocks = self._call("mxSmlGetClocks", index, self._constant(clock_name))
        return float(max(clocks)) if clocks else None


def _text(value) -> str | None:
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if not isinstance(value, str):
        return None
    return value.strip() or None
