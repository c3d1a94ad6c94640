"""Nsight Compute on the candidate (opt-in: `--ncu`): DRAM bytes read and written, kernel duration and
achieved bandwidth of the candidate's own kernels.

After a passed judgement on CUDA, with `ncu` on PATH, the candidate runs once more under
`ncu --clock-control none --csv` in the same sandbox as the judged process (allowlisted environment,
uid drop, rlimits, its build folder: no recompile). The profiled process (profiler_agent.graders.profiled_target)
calls the candidate once outside any NVTX range (warm-up: lazy initialization is left out), then
PROFILED_CALLS times, each call inside a range `profiler_agent call <i>` holding a range `candidate`;
`--nvtx-include candidate/` profiles only kernels launched inside the latter, so the reference's and
the harness's kernels are left out. Each call's kernels are summed; the result is the median over
calls.

The figures are informational: they come from a process tree that also runs submission code (as the
timing does), and they never change the verdict or the flags. The same runner (`run_profiler`, with
another `Profile`) takes the record that bounds the candidate's reported time on every passed CUDA
run: profiler_agent.judge.timing_confirmation. Whatever goes wrong (no ncu, a timeout,
counters refused to the sandbox uid, no kernel matched) leaves `ncu` null with one line in
logs.stderr saying why.

This module reads what ncu prints (and says what to ask it for: Profile); profiler_agent.judge.ncu_profiling
runs it in the sandbox.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
import subprocess
from dataclasses import dataclass

from profiler_agent.measure.nvtx_ranges import CALL_RANGE_PREFIX, CANDIDATE_RANGE, REFERENCE_RANGE, WARM_UP_RANGE

DEFAULT_TIMEOUT_S = 120.0
PROFILED_CALLS = 5
# ncu stops profiling after this many matching launches: a candidate launching thousands of kernels
# per call must not keep the profiler busy until its timeout.
MAX_KERNELS_PER_CALL = 40
DURATION = "gpu__time_duration.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
METRICS = (DRAM_READ, DRAM_WRITE, DURATION)
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_KERNEL_NAMES = 32
MAX_KERNEL_NAME_CHARS = 512
NOTE_PREFIX = "[profiler_agent] ncu: "

# ncu prints SI prefixes (Kbyte = 1000 bytes); the short time units appear in --csv output of
# gpu__time_duration.sum (recorded on an H100: "ns"), the long ones in other sections ("usecond").
BYTES_PER_UNIT = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
MS_PER_UNIT = {
    "ns": 1e-6, "nsecond": 1e-6,
    "us": 1e-3, "usecond": 1e-3,
    "ms": 1.0, "msecond": 1.0,
    "s": 1e3, "second": 1e3,
}


class NcuOutputError(ValueError):
    """ncu's output cannot be read as the figures asked for."""


@dataclass
class KernelLaunch:
    """One profiled kernel launch, its metrics in bytes and milliseconds (None: not reported)."""

    launch_id: int
    kernel: str
    call: int | None = None  # from the NVTX push/pop stack, when ncu printed it
    reference: bool = False  # launched by the reference's census call (REFERENCE_RANGE in the stack)
    duration_ms: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None


def note(text: str) -> str:
    return f"{NOTE_PREFIX}{text}\n"


def _number(text: str) -> float | None:
    """A metric value as ncu prints it: thousands separators ("4,200,448"), "n/a" when unavailable."""
    text = text.strip()
    if not text or text.lower() == "n/a":
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise NcuOutputError(f"not a number: {text!r}") from None


def _scaled(value: float | None, unit: str, table: dict[str, float], metric: str) -> float | None:
    if value is None:
        return None
    if unit not in table:
        raise NcuOutputError(f"unknown unit {unit!r} for {metric}")
    return value * table[unit]


def _csv_rows(text: str) -> list[dict[str, str]]:
    """The rows of ncu's --csv table. Other lines (==PROF== messages, the profiled program's own
    output when it shares the stream) never start with a quote and are left out."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    table = [lines[start]] + [line for line in lines[start + 1:] if line.startswith('"')]
    reader = csv.DictReader(io.StringIO("\n".join(table)))
    for column in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"):
        if column not in reader.fieldnames:
            raise NcuOutputError(f"ncu's table has no column {column!r}")
    return list(reader)


_CALL_IN_STACK = re.compile(re.escape(CALL_RANGE_PREFIX) + r"(\d+)\b")


def _range_stacks(row: dict[str, str]) -> list[str]:
    """The NVTX push/pop stack columns ncu adds with --nvtx."""
    return [value for column, value in row.items() if column and "Push/Pop_Range" in column and value]


def _call_index(row: dict[str, str]) -> int | None:
    """The call a launch belongs to, from the NVTX push/pop stack."""
    for value in _range_stacks(row):
        found = _CALL_IN_STACK.search(value)
        if found:
            return int(found.group(1))
    return None


def split_reference(launches: list[KernelLaunch]) -> tuple[list[KernelLaunch], list[KernelLaunch]]:
    """(the candidate's launches, the reference census call's)."""
    return [k for k in launches if not k.reference], [k for k in launches if k.reference]


def kernel_names(launches: list[KernelLaunch]) -> list[str]:
    return list(dict.fromkeys(launch.kernel for launch in launches))


def launch_id_of(row: dict) -> int:
    """The launch ID of a row of ncu's details table, after checking the row is whole."""
    if None in row or any(value is None for value in row.values()):
        raise NcuOutputError(f"a row of ncu's table has the wrong number of fields: {row!r}"[:300])
    try:
        return int(row["ID"].replace(",", ""))
    except ValueError:
        raise NcuOutputError(f"launch ID {row['ID']!r} is not a number") from None


def _warm_up(row: dict[str, str]) -> bool:
    """A launch in the profiled process's warm-up range and in no call's (Profile.warm_up)."""
    stacks = _range_stacks(row)
    return any(WARM_UP_RANGE in stack for stack in stacks) and _call_index(row) is None


def parse_launches(text: str) -> list[KernelLaunch]:
    """Kernel launches in ncu's --csv output (one row per launch and metric), in launch order. The
    first launch is dropped when it is the profiled process's warm-up (Profile.warm_up): it ran before
    any submission code loaded, so no later launch in that range is one (those stay, uncounted in
    any call, which makes the calls' record unreadable)."""
    launches: dict[int, KernelLaunch] = {}
    rows = _csv_rows(text)
    first = min((launch_id_of(row) for row in rows), default=None)
    for row in rows:
        launch_id = launch_id_of(row)
        if launch_id == first and _warm_up(row):
            continue
        launch = launches.setdefault(launch_id, KernelLaunch(
            launch_id, row["Kernel Name"], _call_index(row),
            reference=any(REFERENCE_RANGE in stack for stack in _range_stacks(row))))
        metric, unit = row["Metric Name"], row["Metric Unit"].strip()
        if metric == DURATION:
            launch.duration_ms = _scaled(_number(row["Metric Value"]), unit, MS_PER_UNIT, metric)
        elif metric in (DRAM_READ, DRAM_WRITE):
            value = _scaled(_number(row["Metric Value"]), unit, BYTES_PER_UNIT, metric)
            setattr(launch, "dram_read_bytes" if metric == DRAM_READ else "dram_write_bytes", value)
    return [launches[key] for key in sorted(launches)]


def group_calls(launches: list[KernelLaunch], calls: int) -> list[list[KernelLaunch]]:
    """The launches of each candidate call. By the NVTX call range when ncu printed it; otherwise by
    order, which holds only when every call launched the same number of kernels."""
    if not launches:
        return []
    marked = [launch.call is not None for launch in launches]
    if all(marked):
        groups: dict[int, list[KernelLaunch]] = {}
        for launch in launches:
            groups.setdefault(launch.call, []).append(launch)
        return [groups[key] for key in sorted(groups)]
    if any(marked):
        raise NcuOutputError("some launches carry the call's NVTX range and some do not")
    if len(launches) % calls:
        raise NcuOutputError(f"{len(launches)} kernel launches do not split evenly into {calls} calls")
    per_call = len(launches) // calls
    return [launches[i:i + per_call] for i in range(0, len(launches), per_call)]


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else float(sum(values))


def _median(values: list[float | None]) -> float | None:
    """The median over calls; None when any call lacks the figure (never a median of a subset)."""
    if not values or any(v is None for v in values):
        return None
    return float(statistics.median(values))


def _whole(value: float | None) -> float | int | None:
    """Byte counts as integers when they are (a median of two may end in .5)."""
    return int(value) if value is not None and value.is_integer() else value


def summarize(groups: list[list[KernelLaunch]], peak_gbps: float | None, version: str | None) -> dict:
    """The `ncu` part of a result: per-call sums, median over calls."""
    durations = [_sum([k.duration_ms for k in g]) for g in groups]
    reads = [_sum([k.dram_read_bytes for k in g]) for g in groups]
    writes = [_sum([k.dram_write_bytes for k in g]) for g in groups]
    rates = [
        (r + w) / (d / 1e3) / 1e9 if d and r is not None and w is not None else None
        for d, r, w in zip(durations, reads, writes)
    ]
    bandwidth = _median(rates)
    names: list[str] = []
    for group in groups:
        for launch in group:
            name = launch.kernel[:MAX_KERNEL_NAME_CHARS]
            if name not in names and len(names) < MAX_KERNEL_NAMES:
                names.append(name)
    return {
        "kernels": names,
        "calls": len(groups),
        "duration_ms": _median(durations),
        "dram_read_bytes": _whole(_median(reads)),
        "dram_write_bytes": _whole(_median(writes)),
        "dram_bandwidth_gbs": bandwidth,
        "pct_peak_bandwidth": 100.0 * bandwidth / peak_gbps if bandwidth and peak_gbps else None,
        "version": version,
    }


def figures_from_output(
    text: str, calls: int, peak_gbps: float | None, version: str | None, launch_cap: int | None = None,
) -> tuple[dict | None, str]:
    """The `ncu` part of a result from ncu's --csv output, or None and why."""
    try:
        launches = parse_launches(text)
        if not launches:
            return None, note(f"no kernel launch matched the NVTX range {CANDIDATE_RANGE!r} (nothing profiled)")
        capped = launch_cap is not None and len(launches) >= launch_cap
        if capped and any(launch.call is None for launch in launches):
            raise NcuOutputError(f"ncu stopped at its launch cap ({launch_cap}); the calls cannot be told apart")
        groups = group_calls(launches, calls)
        if capped:
            groups = groups[:-1]  # the cap may have cut the last call short
    except NcuOutputError as exc:
        return None, note(f"could not read ncu's output: {exc}")
    if not groups:
        return None, note(f"more than {MAX_KERNELS_PER_CALL} kernels per call: not profiled")
    return summarize(groups, peak_gbps, version), ""


def version_line(executable: str) -> str | None:
    """`ncu --version`'s "Version ..." line (the last line when there is none)."""
    try:
        completed = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in completed.stdout.splitlines() if line.strip()]
    return next((line for line in lines if line.startswith("Version")), lines[-1] if lines else None)


@dataclass(frozen=True)
class Profile:
    """What one ncu run collects, and how."""

    metrics: tuple[str, ...]
    calls: int
    kernels_per_call: int  # ncu stops after calls * this many matching launches (--launch-count)
    # "all": ncu flushes the caches before each kernel (its default, for DRAM traffic); "none": each
    # kernel finds the caches as the call's earlier kernels left them, as in a timed call
    cache_control: str = "all"
    # reference calls after the candidate's (their launches: `reference`): the census names its kernels,
    # and the confirmation takes its kernel record from the same profile as the candidate's
    reference_calls: int = 0
    # the most calls (of each model) the profiled process may be asked for with its job, which it is
    # started ahead of (0: `calls`); the launch cap stays `calls`', so more calls never profile more kernels
    most_calls: int = 0
    # one kernel profiled before the job comes (WARM_UP_RANGE), counted in the launch cap
    warm_up: bool = False

    @property
    def started_calls(self) -> int:
        return max(self.calls, self.most_calls)

    @property
    def candidate_cap(self) -> int:
        return self.calls * self.kernels_per_call

    @property
    def launch_cap(self) -> int:
        """ncu's --launch-count: the candidate's calls, then the room of one call for all the reference's
        (a reference of more kernels than that is cut: its record is then not taken)."""
        return self.candidate_cap + (self.kernels_per_call if self.reference_calls else 0) + int(self.warm_up)

    @property
    def calls_cap(self) -> int:
        """The calls' launches when ncu stopped at its launch count (the warm-up's is not read)."""
        return self.launch_cap - int(self.warm_up)


FIGURES = Profile(METRICS, PROFILED_CALLS, MAX_KERNELS_PER_CALL)
