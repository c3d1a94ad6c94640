"""A profile report (the site's `profile` mode, `judge --mode profile`): the candidate's kernels and the
reference's under Nsight Compute, once the correctness trials have run, as `result["profile"]`.

One call of each model (the candidate's first) runs in a fresh sandboxed process
(profiler_agent.graders.profiled_target) under `ncu`, which collects the report's sections (what it asks
for and how its table is read: profiler_agent.judge.profile_output) for at most `kernels_per_model`
launches of each model (ncu stops after twice that many), within `timeout_s`, at the clocks the GPU
runs at (`--clock-control none`), and writes a `.ncu-rep` anyone can open in Nsight Compute. The report
never changes a verdict: it is informative, as a benchmark's times are, and its run ranks nowhere.

Where there is nothing to profile with, `result["profile"]` says so and the run still ends as its
trials decided: a CPU host has no device profiler; a MetaX host is not supported (MACA's own tools,
named in docs/operators.md, are not driven by the agent); an NVIDIA host without `ncu` on PATH has none
installed.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import time
from pathlib import Path

from profiler_agent.executors import build_cache
from profiler_agent.judge import ncu_output, ncu_profiling, profile_output
from profiler_agent.judge.ncu_output import MAX_OUTPUT_BYTES, NcuOutputError
from profiler_agent.measure.nvtx_ranges import CANDIDATE_RANGE

REPORT_FILE = "profile.ncu-rep"  # what the site keeps and its owner downloads
TABLE_FILE = "ncu-details.csv"  # ncu's table the report was read from, beside it (the GPU bench keeps it)
IMPORT_TIMEOUT_S = 120.0
MAX_REPORT_BYTES = 1 << 30  # more is no report of a capped profile
CLOCK_CONTROL = "none"

NO_PROFILER_ON_CPU = ("no profiler exists on a CPU host: Nsight Compute profiles NVIDIA GPUs; this run was "
                      "judged on the CPU, so its report has no kernels")
METAX_UNSUPPORTED = ("profile reports are not supported on MetaX GPUs: the agent drives NVIDIA's Nsight Compute "
                     "only, and MACA's own tools (mx-smi, mcTracer) are not driven by it")
NCU_MISSING = ("Nsight Compute (ncu) is not installed on this GPU host (not on PATH): nothing was profiled; "
               "the host's operator installs it")
DID_NOT_RUN = "not profiled: the candidate did not run its trials to the end ({status})"
NO_KERNEL = f"no kernel launch matched the NVTX range {CANDIDATE_RANGE!r}: neither model launched a GPU kernel"
NO_MODELS = "ncu printed no NVTX ranges: the candidate's and the reference's kernels cannot be told apart"
SECTIONS_ONLY = ("ncu refused the list of metrics, so the report was made with its sections alone: no FLOP counts, "
                 "no stall reasons ({why})")


def empty_profile(vendor: str | None, reason: str | None, tool: str | None = None) -> dict:
    """A report with no kernels, saying why."""
    return {
        "available": False, "tool": tool, "version": None, "vendor": vendor, "reason": reason,
        "kernels_per_model": None, "sections": [], "clock_control": None, "metrics": None, "table_source": None,
        "kernels": [], "models": {}, "report_file": None, "duration_s": None,
    }


def host_vendor(device: str) -> str:
    """"cpu" for a CPU judging, else the GPU backend's vendor ("nvidia", "metax"), read without CUDA."""
    if device != "cuda":
        return "cpu"
    from profiler_agent import devices

    return devices.backend().vendor


def report_command(executable: str, log_file: Path, target: list[str], kernels_per_model: int,
                   with_metrics: bool = True, compute_capability: str = "unknown") -> list[str]:
    """ncu's command line for a report written beside its log (REPORT_FILE) and printed as a table."""
    sections = profile_output.SECTIONS if with_metrics else profile_output.PLAIN_SECTIONS
    metrics = profile_output.metrics_for(compute_capability)
    return [
        executable,
        "--clock-control", CLOCK_CONTROL,
        "--target-processes", "application-only",
        *[item for section in sections for item in ("--section", section)],
        *(["--metrics", ",".join(metrics)] if with_metrics else []),
        "--nvtx", "--nvtx-include", f"{CANDIDATE_RANGE}/",
        "--launch-count", str(2 * kernels_per_model),
        "--export", str(log_file.parent / REPORT_FILE), "--force-overwrite",
        "--csv", "--page", "details", "--print-units", "base",
        "--log-file", str(log_file),
        *target,
    ]


def _refused_its_metrics(run: ncu_profiling.ProfilerRun) -> bool:
    """ncu ended at once over a metric or section it does not know (an older or newer version)."""
    text = run.why.lower()
    return run.output is None and not run.timed_out and ("metric" in text or "section" in text)


def _import_table(executable: str, report: Path) -> str:
    """The details table of an exported report (`ncu --import`), for an ncu that printed none while it
    exported: with the NVTX stacks where this ncu prints them on import, else without."""
    for nvtx in (["--nvtx"], []):
        try:
            completed = subprocess.run(
                [executable, "--import", str(report), *nvtx, "--csv", "--page", "details", "--print-units", "base"],
                capture_output=True, timeout=IMPORT_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError):
            continue
        if completed.returncode == 0:
            return completed.stdout[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
    return ""


def taken_report(report: Path, into: Path) -> dict | None:
    """Copy the report ncu wrote into the sandbox's folder to `into` (a folder of the agent's) and return
    its facts; None when there is none that is a plain file of its own. The sandbox user owns that
    folder and may have left a link to a file only the agent can read in the report's place (a token,
    a key): the folder and the file are opened without following links, the file must be a regular
    one with a single name, and everything after reads the agent's copy."""
    try:
        folder = os.open(report.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fd = os.open(report.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    digest, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as source:
        facts = os.fstat(source.fileno())
        if not stat.S_ISREG(facts.st_mode) or facts.st_nlink != 1 or facts.st_size > MAX_REPORT_BYTES:
            return None
        into.mkdir(parents=True, exist_ok=True)
        with open(into / REPORT_FILE, "wb") as copy:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                size += len(chunk)
                if size > MAX_REPORT_BYTES:
                    break
                digest.update(chunk)
                copy.write(chunk)
    if size > MAX_REPORT_BYTES:
        (into / REPORT_FILE).unlink()
        return None
    return {"name": REPORT_FILE, "bytes": size, "sha256": digest.hexdigest(), "stored": None, "why": None}


def _profile_once(bundle, options, cache_dir: Path, scratch: Path, executable: str, with_metrics: bool):
    cap = options.profile_kernels
    plan = ncu_output.Profile((), 1, cap, reference_calls=1)
    started = ncu_profiling.start_profiler(
        options.device, options.profile_timeout_s, cache_dir, scratch, plan, executable=executable,
        command=lambda ncu, log_file, target: report_command(ncu, log_file, target, cap, with_metrics,
                                                             build_cache.gpu_compute_capability()))
    try:
        # a fresh seed, not the judgement's: the verdict is decided, and this one may be seen
        return ncu_profiling.finish_profiler(started, secrets.randbelow(2**31 - 1024), bundle, bundle.candidate)
    except BaseException:
        if isinstance(started, ncu_profiling.ProfilerAhead):
            started.process.cancel()
        raise


def profile_with_ncu(bundle, options, cache_dir: Path, scratch: Path, executable: str) -> tuple[dict, str]:
    """Profile both models under ncu; the report and ncu's table (empty when there was none)."""
    started = time.monotonic()
    notes = []
    with_metrics = True
    run = _profile_once(bundle, options, cache_dir, scratch / "ncu", executable, with_metrics)
    if _refused_its_metrics(run):
        notes.append(SECTIONS_ONLY.format(why=run.why.strip().splitlines()[-1][:300]))
        with_metrics = False
        scratch = scratch / "sections-only"
        run = _profile_once(bundle, options, cache_dir, scratch / "ncu", executable, with_metrics)
    profile = empty_profile("nvidia", None, tool="ncu")
    profile.update(version=ncu_output.version_line(executable), kernels_per_model=options.profile_kernels,
                   sections=list(profile_output.SECTIONS if with_metrics else profile_output.PLAIN_SECTIONS),
                   clock_control=CLOCK_CONTROL, metrics="listed" if with_metrics else "sections only")
    kept = Path(options.profile_dir) if options.profile_dir is not None else scratch / "report"
    facts = taken_report(scratch / "ncu" / REPORT_FILE, kept)
    if facts is not None:
        profile["report_file"] = facts
    table = ""
    if run.output is not None:
        table, profile["table_source"] = run.output, "profile run"
        if not profile_output.has_table(table) and facts is not None:
            table, profile["table_source"] = _import_table(executable, kept / REPORT_FILE), "import"
    if options.profile_dir is not None and table:
        (Path(options.profile_dir) / TABLE_FILE).write_text(table)
    if run.output is None:
        notes.append(run.why.removeprefix(ncu_output.NOTE_PREFIX).strip())
    else:
        try:
            launches = profile_output.parse(table)
        except NcuOutputError as exc:
            launches = []
            notes.append(f"could not read ncu's table: {exc}")
        else:
            if not launches:
                notes.append(NO_KERNEL)
            elif any(launch.model is None for launch in launches):
                notes.append(NO_MODELS)
        profile["kernels"], profile["models"] = profile_output.kernels_per_model(launches, options.profile_kernels)
        profile["available"] = bool(launches)
    profile["reason"] = "\n".join(notes) or None
    profile["duration_s"] = time.monotonic() - started
    return profile, table


def add_to_result(result: dict, bundle, options, cache_dir: Path, scratch: Path) -> None:
    """Fill result["profile"]; never raises and never changes the verdict."""
    vendor = None
    try:
        vendor = host_vendor(options.device)
        if vendor == "cpu":
            profile = empty_profile(vendor, NO_PROFILER_ON_CPU)
        elif vendor == "metax":
            profile = empty_profile(vendor, METAX_UNSUPPORTED)
        elif result["status"] not in ("passed", "wrong_answer"):
            profile = empty_profile(vendor, DID_NOT_RUN.format(status=result["status"]), tool="ncu")
        else:
            executable = shutil.which("ncu")
            if executable is None:
                profile = empty_profile(vendor, NCU_MISSING, tool="ncu")
            else:
                options.tell("profiling")
                if options.profile_dir is not None:
                    Path(options.profile_dir).mkdir(parents=True, exist_ok=True)
                profile, _ = profile_with_ncu(bundle, options, cache_dir, scratch, executable)
    except Exception as exc:  # noqa: BLE001  (the trials' verdict stands whatever the profiler did)
        profile = empty_profile(vendor, f"the profile failed: {type(exc).__name__}: {exc}")
    result["profile"] = profile
