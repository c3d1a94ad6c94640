"""Device backends: mx-smi parsing on output recorded on real MetaX hosts, the MetaX backend end to end
on a replay of that output, the peak-FLOPs table, and the CPU backend this host really has."""

import os
import stat
import time
from pathlib import Path

import pytest
import torch

from profiler_agent.devices import device_info
from profiler_agent import devices
from profiler_agent.worker import host_inventory
from profiler_agent.measure import metrics
from profiler_agent.devices import metax, mxsmi, nvidia, peaks
from profiler_agent.devices.base import pci_key

FIXTURES = Path(__file__).parent / "fixtures" / "mx-smi"
C500_SLICE_UUID = "GPU-9989eeaf-e8b6-b0c7-a313-c2c978ea5031"  # what torch reports inside the sGPU


def recorded(name: str) -> str:
    """A fixture's recorded output, without the provenance header (its leading "# " lines)."""
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "".join(lines)


# --- the plain `mx-smi` table, in the layouts of four versions ---------------------------------------

def test_table_of_mx_smi_2_2_12_puts_power_first_and_still_parses():
    (gpu,) = mxsmi.parse_table(recorded("c500-2.2.12-table.txt"))
    assert gpu == {
        "index": 0, "name": "MetaX C500", "bus_id": "0000:37:00.0", "temperature_c": 38.0,
        "power_w": 61.0, "power_cap_w": 350.0,
        "memory_used_bytes": 15155 * 2**20, "memory_total_bytes": 65536 * 2**20,
    }
    assert mxsmi.parse_header(recorded("c500-2.2.12-table.txt")) == {"driver": "3.8.30", "maca": "3.5.3.20"}


def test_table_of_mx_smi_2_1_12_with_trailing_spaces():
    gpus = mxsmi.parse_table(recorded("c500-2.1.12-table.txt"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["name"] for g in gpus} == {"MetaX C500"}
    assert gpus[6]["bus_id"] == "0000:37:00.0"
    assert (gpus[6]["temperature_c"], gpus[6]["power_w"], gpus[6]["power_cap_w"]) == (39.0, 73.0, 350.0)
    assert gpus[0]["memory_used_bytes"] == 5680 * 2**20
    assert mxsmi.parse_header(recorded("c500-2.1.12-table.txt"))["driver"] == "2.12.13"


def test_table_of_mx_smi_2_1_6_has_power_without_a_cap():
    gpus = mxsmi.parse_table(recorded("c500-2.1.6-table.txt"))
    assert [(g["name"], g["bus_id"], g["power_w"], g["power_cap_w"], g["temperature_c"]) for g in gpus] == [
        ("MXC500", "0000:05:00.0", 71.0, None, 51.0),
        ("MXC500", "0000:08:00.0", 76.0, None, 51.0),
        ("MXC500", "0000:0e:00.0", 74.0, None, 50.0),
        ("MXC500", "0000:0f:00.0", 71.0, None, 50.0),
    ]
    assert gpus[0]["memory_total_bytes"] == 65536 * 2**20  # the process table below is not a GPU


def test_table_of_mx_smi_2_2_4_with_a_state_column():
    gpus = mxsmi.parse_table(recorded("c550-2.2.4-table.txt"))
    assert len(gpus) == 8 and gpus[7]["name"] == "MetaX C550" and gpus[7]["bus_id"] == "0000:d7:00.0"
    assert (gpus[7]["power_w"], gpus[7]["power_cap_w"], gpus[7]["temperature_c"]) == (56.0, 450.0, 31.0)


def test_header_without_a_banner_has_no_versions():
    assert mxsmi.parse_header(recorded("c500-2.2.12-parse-error.txt")) == {"driver": None, "maca": None}
    assert mxsmi.parse_header(None) == {"driver": None, "maca": None}


def test_list_gives_uuids_and_the_uuids_of_sliced_gpus():
    listed = mxsmi.parse_list(recorded("c500-2.2.12-list.txt"))
    assert len(listed) == 8
    assert listed[0] == {
        "index": 0, "name": "MXC500", "bus_id": "0000:37:00.0",
        "uuid": "GPU-df110ed1-56d2-e35b-d97b-e23bca667d75", "slice_uuids": [C500_SLICE_UUID],
    }
    assert listed[1]["uuid"] is None and listed[1]["bus_id"] == "0000:0e:00.0"  # "Not Available"


# --- per-GPU reports: --summary and --show-* ----------------------------------------------------------

def test_summary_gives_power_temperature_clocks_and_memory():
    (reading,) = mxsmi.parse_details(recorded("c500-2.2.12-summary.txt"))
    assert reading == {
        "bus_id": "0000:37:00.0",
        "temperature_c": 38.5,  # the chip hotspot, not a board sensor
        "power_w": 62.015,  # the board total, not the Pmbus (chip rail) power
        "sm_clock_mhz": 1125.0,
        "mem_clock_mhz": 1800.0,
        "memory_total_bytes": 67108864 * 1024,
        "memory_used_bytes": 15518872 * 1024,
    }


def test_show_clock_and_show_board_power_alone():
    (clock,) = mxsmi.parse_details(recorded("c500-2.2.12-show-clock.txt"))
    assert (clock["sm_clock_mhz"], clock["mem_clock_mhz"], clock["power_w"]) == (1125.0, 1800.0, None)
    (power,) = mxsmi.parse_details(recorded("c500-2.2.12-show-board-power.txt"))
    assert power["power_w"] == 62.015 and power["temperature_c"] is None and power["sm_clock_mhz"] is None


def test_board_power_without_a_total_is_the_sum_of_its_supply_ways():
    without_total = "\n".join(
        line for line in recorded("c500-2.2.12-show-board-power.txt").splitlines() if "Total" not in line
    )
    (power,) = mxsmi.parse_details(without_total)
    assert power["power_w"] == pytest.approx(25.789 + 26.652 + 9.574)


def test_throttle_reasons_none_active_then_one_active():
    idle = recorded("c500-2.2.12-clk-tr.txt")
    assert mxsmi.parse_throttle_reasons(idle) == []
    over_power = idle.replace("Over Power                                : Not Active",
                              "Over Power                                : Active")
    assert over_power != idle
    assert mxsmi.parse_throttle_reasons(over_power) == ["over_power"]


@pytest.mark.parametrize("text", [
    None, "", "garbage\x00\xff | 12W | 0000:zz:00.0", "mx-smi: command not found",
    recorded("c500-2.2.12-parse-error.txt"),
    recorded("c500-2.2.12-table.txt")[:400],  # cut off before the first GPU row
])
def test_unrecognised_output_gives_nothing_and_never_raises(text):
    assert mxsmi.parse_table(text) == []
    assert mxsmi.parse_list(text) == []
    assert mxsmi.parse_details(text) == []
    assert mxsmi.parse_throttle_reasons(text) is None


# --- the MetaX backend on a replay of the recorded output ---------------------------------------------

def _install(tmp_path: Path, script: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "mx-smi"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def replayed_mx_smi(tmp_path, monkeypatch):
    """An `mx-smi` on PATH that prints what the real one printed on a C500 for the same arguments."""
    def play(name):
        return f"grep -v '^# ' '{FIXTURES / name}'"

    folder = _install(tmp_path, f"""case "$*" in
  "") {play("c500-2.2.12-table.txt")} ;;
  "-L") {play("c500-2.2.12-list.txt")} ;;
  "--summary -i 0000:37:00.0") {play("c500-2.2.12-summary.txt")} ;;
  "--show-clk-tr -i 0000:37:00.0") {play("c500-2.2.12-clk-tr.txt")} ;;
  *) {play("c500-2.2.12-parse-error.txt")}; exit 1 ;;
esac
""")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_metax_backend_from_mx_smi_finds_the_slice_torch_reports(replayed_mx_smi):
    backend = devices.detect()  # NVML sees no GPU here, pymxsml is not installed: mx-smi decides
    assert backend.vendor == "metax"
    assert backend.driver_version() == "3.8.30"
    assert backend.inventory() == [
        {"kind": "cuda", "name": "MetaX C500", "uuid": "GPU-df110ed1-56d2-e35b-d97b-e23bca667d75",
         "memory_bytes": 65536 * 2**20},
    ]
    gpu = backend.gpu_for(uuid=C500_SLICE_UUID, pci_bus_id=None)
    assert gpu is not None and gpu.facts().pci_bus_id == "0000:37:00.0"
    assert backend.gpu_for(uuid=None, pci_bus_id="0000:37:00.0").facts() == gpu.facts()
    assert backend.gpu_for(uuid="GPU-00000000-0000-0000-0000-000000000000", pci_bus_id="0000:99:00.0") is None
    assert gpu.peak_gbps() == pytest.approx(1843.2)
    assert gpu.energy_mj() is None
    sample = gpu.sample()
    assert (sample.power_w, sample.temperature_c, sample.sm_clock_mhz, sample.mem_clock_mhz) == (
        62.015, 38.5, 1125.0, 1800.0)
    assert sample.throttle_reasons == ()


def test_cuda_visible_devices_narrows_the_metax_inventory(replayed_mx_smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert devices.detect().inventory() == []  # the table lists one usable GPU, index 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", C500_SLICE_UUID)
    assert [row["name"] for row in devices.detect().inventory()] == ["MetaX C500"]


def test_a_hanging_mx_smi_times_out_and_reads_as_nothing(tmp_path, monkeypatch):
    folder = _install(tmp_path, "exec sleep 30\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    assert mxsmi.run(["--summary"], timeout_s=0.5) is None
    assert time.monotonic() - started < 5
    monkeypatch.setattr(mxsmi, "TIMEOUT_S", 0.3)
    source = metax.MxSmiSource()
    assert source.devices() == [] and source.driver_version() is None


def test_a_hanging_mx_smi_sample_is_all_nulls(tmp_path, monkeypatch):
    folder = _install(tmp_path, "exec sleep 30\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(metax, "SAMPLE_TIMEOUT_S", 0.3)
    sample = metax.MxSmiSource().sample({"bus_id": "0000:37:00.0"})
    assert sample == devices.Sample()


def test_without_mx_smi_there_is_no_metax_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no mx-smi anywhere on it
    monkeypatch.setattr(mxsmi, "KNOWN_LOCATIONS", ())  # nor where MetaX installs it
    assert mxsmi.executable() is None and mxsmi.run([]) is None
    assert metax.probe() is None
    assert devices.detect().vendor in ("cpu", "nvidia")


# --- this host: the CPU backend (and NVML answering nothing) ------------------------------------------

def test_cpu_backend_describes_this_host_and_nothing_else():
    backend = devices.backend_for_kind("cpu")
    (row,) = backend.inventory()
    assert row["kind"] == "cpu" and row["name"] and row["uuid"] is None and row["memory_bytes"] > 0
    assert backend.visible_gpus() == [] and backend.gpu_for("GPU-x", "0000:01:00.0") is None
    assert host_inventory.devices_of("cpu") == [row]
    described = device_info.describe_device("cpu")
    assert described["name"] == row["name"] and described["peak_tflops"] is None and described["peak_gbps"] is None


def test_nvidia_backend_lists_exactly_the_gpus_nvml_sees():
    backend = nvidia.NvidiaBackend()
    gpus, rows = backend.visible_gpus(), backend.inventory()
    assert backend.gpu_for(None, None) is None  # nothing to match on
    if not backend.sees_a_device():  # this machine and CI: no driver, nothing invented
        assert gpus == [] and rows == []
    else:  # a GPU host: one inventory row per visible GPU, each named and sized
        assert len(rows) == len(gpus) > 0
        assert all(row["kind"] == "cuda" and row["name"] and row["memory_bytes"] > 0 for row in rows)


def test_pci_addresses_compare_across_tools():
    assert pci_key("00000000:3B:00.0") == pci_key("0000:3b:00.0") == (0, 0x3B, 0, 0)
    assert pci_key("not an address") is None and pci_key(None) is None


# --- peak FLOP/s per device and dtype ---------------------------------------------------------------

@pytest.mark.parametrize("name, dtype, tflops", [
    ("NVIDIA H100 80GB HBM3", "bf16", 989.4),
    ("NVIDIA H100 80GB HBM3", "fp32", 66.9),
    ("NVIDIA H100 80GB HBM3", "tf32", 494.7),
    ("NVIDIA H100 80GB HBM3", "fp8", 1978.9),
    ("NVIDIA H100 PCIe", "fp16", 756.0),
    ("NVIDIA H100 NVL", "fp16", 835.5),
    ("NVIDIA H200", "fp16", 989.4),
    ("NVIDIA H20", "fp16", 148.0),
    ("NVIDIA H20", "fp32", 44.0),
    ("NVIDIA A100-SXM4-80GB", "tf32", 156.0),
    ("NVIDIA A100 80GB PCIe", "bf16", 312.0),
    ("NVIDIA L40S", "fp16", 362.05),
    ("NVIDIA GeForce RTX 4090", "fp16", 165.2),
    ("MetaX C500", "bf16", 280.0),
    ("MXC500", "tf32", 140.0),
])
def test_peak_table_lookup(name, dtype, tflops):
    assert peaks.peak_tflops(name, dtype) == tflops


@pytest.mark.parametrize("name, dtype", [
    ("NVIDIA A100-SXM4-80GB", "fp8"),  # Ampere has no FP8
    ("MetaX C500", "fp32"),  # no published non-tensor FP32 figure found
    ("MetaX C550", "fp16"),  # another model
    ("NVIDIA GeForce RTX 4090 D", "fp16"),  # a cut-down variant
    ("NVIDIA H100", "fp16"),  # SXM or PCIe cannot be told from this name
    ("NVIDIA B200", "fp16"),
    ("Intel(R) Xeon(R) Processor @ 2.80GHz", "fp32"),
    (None, "fp16"),
    ("NVIDIA H100 80GB HBM3", None),
    ("NVIDIA H100 80GB HBM3", "fp64"),
])
def test_unknown_device_or_dtype_has_no_peak(name, dtype):
    assert peaks.peak_tflops(name, dtype) is None


def test_h20_is_not_mistaken_for_h200_or_the_reverse():
    assert peaks.peak_tflops("NVIDIA H20", "fp16") != peaks.peak_tflops("NVIDIA H200", "fp16")


def test_the_reference_dtype_picks_the_peak():
    h100 = "NVIDIA H100 80GB HBM3"
    half = [torch.ones(4, dtype=torch.float16), torch.ones(4, dtype=torch.float16)]
    assert device_info.peak_tflops(h100, half, False) == 989.4
    single = [torch.ones(4), torch.arange(3), 2.0]  # integer tensors and scalars do not count
    assert device_info.peak_tflops(h100, single, False) == 66.9
    assert device_info.peak_tflops(h100, single, True) == 494.7  # the reference allowed TF32
    assert device_info.peak_tflops(h100, [torch.ones(2), torch.ones(2, dtype=torch.bfloat16)], False) is None  # mixed
    assert device_info.peak_tflops(h100, [torch.arange(3)], False) is None
    assert peaks.flops_dtype([(torch.ones(1, dtype=torch.float8_e4m3fn),)], False) == "fp8"


def test_pct_peak_flops_follows_from_the_peak():
    derived = metrics.derived_metrics(flops=2e12, nbytes=None, median_ms=10.0, peak_gbps=None,
                                      peak_tflops=peaks.peak_tflops("NVIDIA H100 80GB HBM3", "bf16"))
    assert derived["tflops"] == pytest.approx(200.0)
    assert derived["pct_peak_flops"] == pytest.approx(100 * 200 / 989.4)
    assert metrics.derived_metrics(2e12, None, 10.0, None, None)["pct_peak_flops"] is None


def test_sampling_the_replayed_c500_gives_a_power_and_clock_trace(replayed_mx_smi):
    from profiler_agent.measure import telemetry

    gpu = devices.detect().gpu_for(uuid=C500_SLICE_UUID, pci_bus_id=None)
    assert gpu.min_sample_interval_s == 0.5  # mx-smi readings start processes: not every 10 ms
    with telemetry.TelemetrySampler(gpu, interval_s=0.01) as sampler:
        time.sleep(0.2)
    assert sampler.samples == 2  # the first reading, then the last one at exit
    out = sampler.telemetry()
    assert out["trace"] and all(p["power_w"] == 62.015 and p["sm_clock_mhz"] == 1125.0 for p in out["trace"])
    assert (out["temperature_c"], out["mem_clock_mhz"], out["throttle_reasons"]) == (38.5, 1800.0, [])
