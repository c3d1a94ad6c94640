"""What a profile report asks Nsight Compute for, and how its table is read into one record per kernel
(profiler_agent.judge.profile_report runs it).

The run collects the sections SpeedOfLight, Occupancy, LaunchStats and WarpStateStats (and the roofline
chart's, for the `.ncu-rep` opened in Nsight Compute) and, named one by one with `--metrics`, the raw
metrics the record is read from: a section's rows carry labels ("Duration", "Achieved Occupancy"), which
the reader also knows, as it must when ncu refused the metric list and the run was made with the
sections alone. The table is `ncu --csv --page details --print-units base`: one row per kernel launch
and metric, the columns "ID", the NVTX push/pop stacks (with `--nvtx`), "Kernel Name", "Block Size",
"Grid Size", "Section Name", "Metric Name", "Metric Unit", "Metric Value" (newer versions add rule
columns, which are left alone).

A launch is the reference's when its NVTX stack holds REFERENCE_RANGE (the profiled process runs the
reference's call inside it, after the candidate's), the candidate's otherwise; without stack columns
the model is unknown (null).

Achieved FLOP/s counts the FP32, FP64 and FP16 instructions the SM's pipes execute (add, mul, and an
fma as two), as Nsight Compute's roofline does: tensor-core work is not in it. The arithmetic intensity
is those FLOPs over the DRAM bytes read and written.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from profiler_agent.judge.ncu_output import MS_PER_UNIT, NcuOutputError, _number, _range_stacks, launch_id_of
from profiler_agent.measure.nvtx_ranges import REFERENCE_RANGE

DEFAULT_KERNELS_PER_MODEL = 20  # ncu stops after twice this many launches
DEFAULT_TIMEOUT_S = 600.0  # the profiled run under ncu, from its start to its end

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "SpeedOfLight_RooflineChart")
# the sections a run without the metric list collects (the roofline's needs no extra metric there)
PLAIN_SECTIONS = SECTIONS[:4]

DURATION = "gpu__time_duration.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
L2_PCT = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
REGISTERS = "launch__registers_per_thread"
DRAM_BYTES = "dram__bytes.sum"
# thread instructions executed with their predicate on, and the FLOPs each counts for
FLOP_METRICS = {
    f"smsp__sass_thread_inst_executed_op_{precision}{op}_pred_on.sum": (2 if op == "fma" else 1)
    for precision in ("f", "d", "h") for op in ("add", "mul", "fma")
}
# Warp states between two issued instructions (WarpStateStats): each metric is the average number of
# cycles a warp spent in that state per issued instruction, so their sum is the cycles per instruction.
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
                 "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
                 "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
_STALL_NAME = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
NOT_A_STALL = "selected"  # the cycle the warp issued: in the sum, never a reason
TOP_STALLS = 3
METRICS = (DURATION, SM_PCT, MEMORY_PCT, DRAM_PCT, L2_PCT, OCCUPANCY, THEORETICAL_OCCUPANCY, REGISTERS, DRAM_BYTES,
           *FLOP_METRICS, *(STALL_METRIC.format(reason) for reason in STALL_REASONS))
# Hopper's warpgroup MMA (wgmma) has a stall of its own, a metric of that chip alone (`ncu --query-metrics
# --chip gh100`): asked for elsewhere, ncu would refuse the whole list
STALL_REASONS_BY_ARCH = {9: ("gmma",)}


def metrics_for(compute_capability: str) -> tuple[str, ...]:
    """The listed metrics for a GPU of this compute capability ("9.0"; "unknown" gets the common ones)."""
    major = compute_capability.split(".")[0]
    extra = STALL_REASONS_BY_ARCH.get(int(major), ()) if major.isdigit() else ()
    return (*METRICS, *(STALL_METRIC.format(reason) for reason in extra))

# The same figures as a section labels them: (section, label, unit or None for any)
SOL = "GPU Speed Of Light Throughput"
LABELS = {
    DURATION: (SOL, "Duration", None),
    SM_PCT: (SOL, "Compute (SM) Throughput", "%"),
    MEMORY_PCT: (SOL, "Memory Throughput", "%"),
    DRAM_PCT: (SOL, "DRAM Throughput", "%"),
    L2_PCT: (SOL, "L2 Cache Throughput", "%"),
    OCCUPANCY: ("Occupancy", "Achieved Occupancy", "%"),
    THEORETICAL_OCCUPANCY: ("Occupancy", "Theoretical Occupancy", "%"),
    REGISTERS: ("Launch Statistics", "Registers Per Thread", None),
}
MODELS = ("candidate", "reference")
MAX_NAME_CHARS = 512
# SI prefixes ncu puts on a unit when it scales a value (Kbyte, Minst); --print-units base asks for none
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass
class Launch:
    """One profiled kernel launch: its name, launch configuration, model and metrics as ncu printed them."""

    launch_id: int
    name: str
    block: list[int] | None
    grid: list[int] | None
    model: str | None
    metrics: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (section, name) -> (unit, value)


def dimensions(text: str) -> list[int] | None:
    """"(256, 1, 1)" as [256, 1, 1]; None when it is not three whole numbers."""
    numbers = re.findall(r"\d+", text or "")
    return [int(n) for n in numbers] if len(numbers) == 3 else None


def _rows(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    table = [lines[start]] + [line for line in lines[start + 1:] if line.startswith('"')]
    reader = csv.DictReader(io.StringIO("\n".join(table)))
    columns = reader.fieldnames or []
    for column in ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"):
        if column not in columns:
            raise NcuOutputError(f"ncu's table has no column {column!r}")
    # the rule columns after the value: ncu 2025.3 ends a metric's row at its value, leaving them off
    rules = columns[columns.index("Metric Value") + 1:]
    rows = list(reader)
    for row in rows:
        for column in rules:
            if row.get(column, "") is None:
                row[column] = ""
    return rows


def has_table(text: str) -> bool:
    return any(line.startswith('"ID",') for line in text.splitlines())


def parse(text: str) -> list[Launch]:
    """The launches of ncu's details table, in launch order."""
    launches: dict[int, Launch] = {}
    for row in _rows(text):
        launch_id = launch_id_of(row)
        launch = launches.get(launch_id)
        if launch is None:
            stacks = _range_stacks(row)
            has_stacks = any(column and "Push/Pop_Range" in column for column in row)
            model = ("reference" if any(REFERENCE_RANGE in stack for stack in stacks) else "candidate") if has_stacks else None
            launch = launches[launch_id] = Launch(launch_id, row["Kernel Name"][:MAX_NAME_CHARS],
                                                  dimensions(row.get("Block Size", "")),
                                                  dimensions(row.get("Grid Size", "")), model)
        launch.metrics[(row["Section Name"].strip(), row["Metric Name"].strip())] = (
            row["Metric Unit"].strip(), row["Metric Value"])
    return [launches[key] for key in sorted(launches)]


def _in_base_units(value: float, unit: str) -> float:
    """A value whose unit ncu scaled (Kbyte, Minst) back in the unit's base."""
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1].islower():
        return value * _PREFIX[unit[0]]
    return value


def _figure(launch: Launch, metric: str) -> float | None:
    """A metric's value, in its base unit (durations in ms): by its name in any section, else by the
    label its section gives it."""
    found = next(((unit, value) for (_, name), (unit, value) in launch.metrics.items() if name == metric), None)
    if found is None and metric in LABELS:
        section, label, wanted_unit = LABELS[metric]
        found = next(((unit, value) for (where, name), (unit, value) in launch.metrics.items()
                      if name == label and where == section and (wanted_unit is None or unit == wanted_unit)), None)
    if found is None:
        return None
    unit, text = found
    value = _number(text)
    if value is None:
        return None
    if metric == DURATION:
        if unit not in MS_PER_UNIT:
            raise NcuOutputError(f"unknown unit {unit!r} for {metric}")
        return value * MS_PER_UNIT[unit]
    return _in_base_units(value, unit)


def stall_breakdown(launch: Launch) -> list[dict]:
    """The top reasons warps waited between issued instructions, each with its share of all the cycles
    between issues (the `selected` cycle included in the whole, never listed)."""
    cycles = {}
    for (_, name), (unit, text) in launch.metrics.items():
        found = _STALL_NAME.match(name)
        value = _number(text) if found else None
        if value is not None:
            cycles[found.group(1)] = _in_base_units(value, unit)
    whole = sum(cycles.values())
    if not whole > 0:
        return []
    ranked = sorted(((reason, value) for reason, value in cycles.items() if reason != NOT_A_STALL and value > 0),
                    key=lambda item: (-item[1], item[0]))
    return [{"reason": reason, "share_pct": 100.0 * value / whole, "cycles_per_instruction": value}
            for reason, value in ranked[:TOP_STALLS]]


def _flops(launch: Launch) -> float | None:
    counts = [(_figure(launch, metric), weight) for metric, weight in FLOP_METRICS.items()]
    if all(count is None for count, _ in counts):
        return None
    return float(sum(count * weight for count, weight in counts if count is not None))


def kernel_record(launch: Launch) -> dict:
    """One kernel's figures for the report: null where ncu gave none."""
    duration_ms = _figure(launch, DURATION)
    flops, dram_bytes = _flops(launch), _figure(launch, DRAM_BYTES)
    registers = _figure(launch, REGISTERS)
    return {
        "model": launch.model,
        "launch": launch.launch_id,
        "name": launch.name,
        "duration_ms": duration_ms,
        "grid": launch.grid,
        "block": launch.block,
        "registers": int(registers) if registers is not None else None,
        "achieved_occupancy_pct": _figure(launch, OCCUPANCY),
        "theoretical_occupancy_pct": _figure(launch, THEORETICAL_OCCUPANCY),
        "sm_pct": _figure(launch, SM_PCT),
        "memory_pct": _figure(launch, MEMORY_PCT),
        "dram_pct": _figure(launch, DRAM_PCT),
        "l2_pct": _figure(launch, L2_PCT),
        "stalls": stall_breakdown(launch),
        "flops": flops,
        "dram_bytes": dram_bytes,
        "flop_per_s": flops / (duration_ms / 1e3) if flops is not None and duration_ms else None,
        "arithmetic_intensity": flops / dram_bytes if flops is not None and dram_bytes else None,
    }


def kernels_per_model(launches: list[Launch], cap: int) -> tuple[list[dict], dict]:
    """The records of at most `cap` launches per model, in launch order, and per model how many were
    profiled and whether the cap may have cut its kernels short. ncu stopped after 2 * cap launches, the
    candidate's first: a candidate of more than `cap` kernels leaves less room for the reference's.
    Launches of no known model (no NVTX stacks) are kept up to 2 * cap."""
    records = []
    seen = {model: 0 for model in (*MODELS, None)}
    for launch in launches:
        seen[launch.model] += 1
        if seen[launch.model] <= (cap if launch.model else 2 * cap):
            records.append(kernel_record(launch))
    stopped = len(launches) >= 2 * cap  # ncu's --launch-count ended the profile
    capped = {"candidate": seen["candidate"] > cap, "reference": seen["reference"] > cap or stopped}
    models = {}
    for model in MODELS:
        shown = [r["duration_ms"] for r in records if r["model"] == model]
        models[model] = {"kernels": len(shown), "duration_ms": _total(shown) if shown else None,
                         "capped": capped[model]}
    return records, models


def _total(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else float(sum(values))
