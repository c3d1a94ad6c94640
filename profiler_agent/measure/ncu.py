"""Nsight Compute on the candidate (opt-in: `--ncu`): DRAM bytes read and written, kernel duration and
achieved bandwidth of the candidate's own kernels.

After a passed judgement on CUDA, with `ncu` on PATH, the candidate runs once more under
`ncu --clock-control none --csv` in the same sandbox as the judged process (allowlisted environment,
uid drop, rlimits, its build folder: no recompile). The profiled process (profiler_agent.measure.ncu_target)
calls the candidate once outside any NVTX range (warm-up: lazy initialization is left out), then
PROFILED_CALLS times, each call inside a range `profiler_agent call <i>` holding a range `candidate`;
`--nvtx-include candidate/` profiles only kernels launched inside the latter, so the reference's and
the harness's kernels are left out. Each call's kernels are summed; the result is the median over
calls.

The figures are informational: they come from a process tree that also runs submission code (as the
timing does), and they never change the verdict or the flags. The same runner (`run_profiler`, with
another `Profile`) takes the record that bounds the candidate's reported time on every passed CUDA
run: profiler_agent.measure.confirm. Whatever goes wrong (no ncu, a timeout,
counters refused to the sandbox uid, no kernel matched) leaves `ncu` null with one line in
logs.stderr saying why.
"""

from __future__ import annotations

import csv
import io
import json
import re
import secrets
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from profiler_agent.bundles import build_cache
from profiler_agent.harness import ahead
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, run_sandboxed

DEFAULT_TIMEOUT_S = 120.0
PROFILED_CALLS = 5
# ncu stops profiling after this many matching launches: a candidate launching thousands of kernels
# per call must not keep the profiler busy until its timeout.
MAX_KERNELS_PER_CALL = 40
# The range ncu profiles (--nvtx-include): each candidate call runs in one, inside its call's range;
# the reference's census call (Profile.reference_call) in one inside REFERENCE_RANGE.
CANDIDATE_RANGE = "candidate"
CALL_RANGE_PREFIX = "profiler_agent call "
REFERENCE_RANGE = "profiler_agent reference"
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


def parse_launches(text: str) -> list[KernelLaunch]:
    """Kernel launches in ncu's --csv output (one row per launch and metric), in launch order."""
    launches: dict[int, KernelLaunch] = {}
    for row in _csv_rows(text):
        if None in row or any(value is None for value in row.values()):
            raise NcuOutputError(f"a row of ncu's table has the wrong number of fields: {row!r}"[:300])
        try:
            launch_id = int(row["ID"].replace(",", ""))
        except ValueError:
            raise NcuOutputError(f"launch ID {row['ID']!r} is not a number") from None
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
    # one reference call after the candidate's, for the kernel census (its launches: `reference`)
    reference_call: bool = False

    @property
    def candidate_cap(self) -> int:
        return self.calls * self.kernels_per_call

    @property
    def launch_cap(self) -> int:
        """ncu's --launch-count: the candidate's calls, then room for the reference's census call."""
        return self.candidate_cap + (self.kernels_per_call if self.reference_call else 0)


FIGURES = Profile(METRICS, PROFILED_CALLS, MAX_KERNELS_PER_CALL)


def ncu_command(executable: str, log_file: Path, target: list[str], calls: int, profile: Profile = FIGURES) -> list[str]:
    cache = ["--cache-control", profile.cache_control] if profile.cache_control != "all" else []
    return [
        executable,
        "--clock-control", "none",  # the clocks the timing saw, not ncu's base clocks
        *cache,
        "--target-processes", "application-only",
        "--csv",
        "--log-file", str(log_file),  # ncu's table apart from the profiled program's own stdout
        "--metrics", ",".join(profile.metrics),
        "--nvtx", "--nvtx-include", f"{CANDIDATE_RANGE}/",
        "--launch-count", str(profile.launch_cap),
        *target,
    ]


def _error_lines(text: str, limit: int = 2000) -> str:
    lines = [line for line in text.splitlines() if line.startswith(("==ERROR==", "==WARNING=="))]
    return "\n".join(lines)[-limit:]


def _read_head(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_OUTPUT_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


@dataclass
class ProfilerRun:
    """ncu's table, or None and why not (`timed_out` tells a timeout apart)."""

    output: str | None
    why: str = ""
    timed_out: bool = False
    executable: str | None = None


def start_profiler(
    bundle, candidate: Path, device: str, timeout_s: float, cache_dir: Path, scratch: Path, profile: Profile,
    outputs: Path | None = None, executable: str | None = None, limits=None,
) -> "ProfilerAhead | ProfilerRun":
    """Start the candidate under ncu in the sandbox (profiler_agent.measure.ncu_target), ahead of its
    turn: it waits for its seed (`finish_profiler`). A ProfilerRun at once when ncu is missing."""
    executable = executable or shutil.which("ncu")
    if executable is None:
        return ProfilerRun(None, note("not found on PATH; nothing profiled"))
    scratch.mkdir(parents=True)
    workdir, home, tmp = scratch / "bundle", scratch / "home", scratch / "tmp"
    shutil.copytree(bundle.root, workdir)  # submission code may write to its cwd
    home.mkdir()
    tmp.mkdir()
    if outputs is not None:
        outputs.mkdir(parents=True)
    user = privileges.sandbox_user()
    extensions = build_cache.extensions_dir(build_cache.reachable_cache_dir(cache_dir, user), candidate, device)
    log_file = scratch / "ncu-output.csv"
    target = [
        sys.executable, "-m", "profiler_agent.measure.ncu_target",
        "--bundle", str(workdir),
        "--reference", bundle.reference.name,
        "--candidate", candidate.name,
        "--device", device,
        "--calls", str(profile.calls),
        *(["--outputs", str(outputs)] if outputs is not None else []),
        *(["--reference-call"] if profile.reference_call else []),
    ]
    privileges.hand_over(scratch, user)
    process = ahead.StartedAhead(lambda pending, on_started: run_sandboxed(
        ncu_command(executable, log_file, target, profile.calls, profile),
        cwd=workdir,
        # the judged process's precompiled header too: the same build flags find the same build
        env=child_env(home, tmp, extensions, build_cache.pch_root(cache_dir)),
        timeout_s=timeout_s,
        logs_dir=scratch / "logs",
        # the seed on stdin, never in argv: ncu passes its stdin on to the profiled process
        stdin_data=pending,
        user=user,
        limits=limits or Limits(),
        on_started=on_started,
    ))
    return ProfilerAhead(process, executable, log_file, extensions, user, timeout_s, workdir, home)


@dataclass
class ProfilerAhead:
    process: ahead.StartedAhead
    executable: str
    log_file: Path
    extensions: Path
    user: object
    timeout_s: float
    workdir: Path  # the profiled process's copy of the bundle
    home: Path  # its home (the JIT caches of Triton or CuPy kernels it built)


def finish_profiler(started: "ProfilerAhead | ProfilerRun", seed: int) -> ProfilerRun:
    """Send the seed to a profiler started ahead and read what ncu recorded."""
    if isinstance(started, ProfilerRun):
        return started
    # the build folder is the candidate's: held from the seed to the end, as the judged process held it
    with build_cache.exclusive(started.extensions):
        privileges.hand_over(started.extensions, started.user)
        run = started.process.finish(json.dumps({"seed": seed}).encode())
    return interpret_run(run, started.log_file, started.timeout_s, started.executable)


def interpret_run(run, log_file: Path, timeout_s: float, executable: str) -> ProfilerRun:
    output = _read_head(log_file)
    everything = "\n".join([output, run.stdout, run.stderr])
    if run.timed_out:
        return ProfilerRun(None, note(f"timed out after {timeout_s:g} s; ncu and the profiled process were killed"),
                           timed_out=True)
    if "ERR_NVGPUCTRPERM" in everything:
        return ProfilerRun(None, note(
            "the GPU's performance counters are refused to the sandbox user (ERR_NVGPUCTRPERM); allow "
            "them to non-admin users (NVreg_RestrictProfilingToAdminUsers=0) to profile here"
        ))
    if run.exit_code != 0:
        details = "\n".join(part for part in (_error_lines(output + "\n" + run.stdout), run.stderr[-2000:]) if part)
        return ProfilerRun(None, note(f"ncu or the profiled process failed (exit code {run.exit_code}):\n{details.rstrip()}"))
    return ProfilerRun(output, executable=executable)


def run_profiler(
    bundle, candidate: Path, device: str, timeout_s: float, cache_dir: Path, scratch: Path, profile: Profile,
    seed: int, outputs: Path | None = None, executable: str | None = None, limits=None,
) -> ProfilerRun:
    """Run the candidate under ncu in the sandbox, `profile.calls` calls on inputs from `seed`, each
    call's output saved to `outputs` when given (start_profiler and finish_profiler at once)."""
    started = start_profiler(bundle, candidate, device, timeout_s, cache_dir, scratch, profile, outputs,
                             executable, limits)
    return finish_profiler(started, seed)


def profile_candidate(
    bundle, candidate: Path, device: str, timeout_s: float, cache_dir: Path, scratch: Path,
    peak_gbps: float | None, calls: int = PROFILED_CALLS, executable: str | None = None,
) -> tuple[dict | None, str]:
    """Run the candidate under ncu in the sandbox; its figures, or None and a note saying why."""
    profile = Profile(METRICS, calls, MAX_KERNELS_PER_CALL)
    # a fresh seed, not the judgement's: the verdict is decided, and this one may be seen
    run = run_profiler(bundle, candidate, device, timeout_s, cache_dir, scratch, profile,
                       secrets.randbelow(2**31 - 1024), executable=executable)
    if run.output is None:
        return None, run.why
    return figures_from_output(run.output, calls, peak_gbps, version_line(run.executable), profile.launch_cap)


def add_to_result(result: dict, bundle, options, cache_dir: Path, scratch: Path) -> None:
    """Fill result["ncu"] for a judged bundle, or leave it null with a line in logs.stderr saying
    why. Never raises: profiling never changes a verdict."""
    figures, why = None, ""
    try:
        if options.device != "cuda":
            why = note(f"skipped: Nsight Compute profiles CUDA devices, this judgement ran on {options.device}")
        elif result["status"] != "passed":
            why = note(f"skipped: the candidate did not pass ({result['status']})")
        else:
            figures, why = profile_candidate(
                bundle, bundle.candidate, options.device, options.ncu_timeout_s, cache_dir, scratch,
                result["device"].get("peak_gbps"),
            )
    except Exception as exc:  # noqa: BLE001  (the judgement stands whatever the profiler did)
        figures, why = None, note(f"failed: {type(exc).__name__}: {exc}")
    result["ncu"] = figures
    result["logs"]["stderr"] += why
