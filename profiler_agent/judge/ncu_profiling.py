"""Running Nsight Compute on the candidate in the sandbox (profiler_agent.graders.profiled_target under
`ncu --csv`), started ahead of its turn where the confirmation wants it (profiler_agent.judge.started_ahead),
and the opt-in `--ncu` figures of a passed candidate. What ncu prints is read by
profiler_agent.judge.ncu_output."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from profiler_agent.executors import build_cache
from profiler_agent.judge import started_ahead
from profiler_agent.sandbox.child_channel import CUDA_AHEAD, GPU_TURN
from profiler_agent.measure.nvtx_ranges import TIMELINE_PREFIX
from profiler_agent.judge.ncu_output import (
    CANDIDATE_RANGE, FIGURES, MAX_OUTPUT_BYTES, METRICS, MAX_KERNELS_PER_CALL, PROFILED_CALLS, Profile,
    figures_from_output, note, version_line,
)
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, run_sandboxed

PROFILER_NICENESS = 19


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


def last_lines(text: str, limit: int = 2000) -> str:
    """The end of `text`, whole lines only, at most `limit` characters (one longer line: its end): a
    reason cut mid-word read as a different error."""
    kept, size = [], 0
    for line in reversed(text.rstrip("\n").splitlines()):
        if size + len(line) + 1 > limit:
            if not kept:
                kept.append("…" + line[-(limit - 1):])
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(reversed(kept))


def _error_lines(text: str, limit: int = 2000) -> str:
    return last_lines("\n".join(line for line in text.splitlines() if line.startswith(("==ERROR==", "==WARNING=="))),
                      limit)


def _read_head(path: Path) -> str:
    """The start of ncu's log, in a folder the sandbox user owns: neither the folder nor the file is
    followed if it is a link (the agent reads as root, and what it reads reaches the result)."""
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return ""
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
    timeline: str = ""  # the profiled process's own line: when it had loaded and when it was done


def start_profiler(
    device: str, timeout_s: float, cache_dir: Path, scratch: Path, profile: Profile,
    outputs: Path | None = None, executable: str | None = None, limits=None, cuda_ahead: bool = False,
    command=None, wait_s: float = 0.0, gpu_turn: bool = False,
) -> "ProfilerAhead | ProfilerRun":
    """Start ncu on profiler_agent.graders.profiled_target in the sandbox, ahead of its turn and of its job:
    `finish_profiler` copies the bundle in and sends the seed. A ProfilerRun at once when ncu is missing.
    `command(executable, log_file, target)`: ncu's command line, when not `profile`'s own (ncu_command).
    `wait_s`: how long it may wait for a gate after its job comes (give_profiler), beyond the
    `timeout_s` it has from its turn (collect_profiler). `gpu_turn`: it makes its CUDA context (and ncu's
    warm-up) only when given its turn at the GPU (ProfilerAhead.give_turn), or else with its job."""
    executable = executable or shutil.which("ncu")
    if executable is None:
        return ProfilerRun(None, note("not found on PATH; nothing profiled"))
    scratch.mkdir(parents=True)
    workdir, home, tmp = scratch / "bundle", scratch / "home", scratch / "tmp"
    for folder in (workdir, home, tmp):
        folder.mkdir()
    if outputs is not None:
        outputs.mkdir(parents=True)
    user = privileges.sandbox_user()
    log_file = scratch / "ncu-output.csv"
    target = [
        sys.executable, "-m", "profiler_agent.graders.profiled_target",
        "--bundle", str(workdir),
        "--device", device,
        "--calls", str(profile.started_calls),
        *(["--outputs", str(outputs)] if outputs is not None else []),
        *(["--reference-calls", str(max(profile.reference_calls, profile.most_calls))] if profile.reference_calls else []),
        *([CUDA_AHEAD] if cuda_ahead else []),
        *([GPU_TURN] if gpu_turn else []),
        *(["--warm-up"] if profile.warm_up else []),
    ]
    privileges.hand_over(scratch, user)
    privileges.keep_private(user, workdir, home, tmp)
    process = started_ahead.StartedAhead(lambda pending, on_started: run_sandboxed(
        command(executable, log_file, target) if command else ncu_command(executable, log_file, target,
                                                                           profile.calls, profile),
        cwd=workdir,
        # the judged process's precompiled header too: the same build flags find the same build
        env=child_env(home, tmp, None, build_cache.pch_root(cache_dir)),
        timeout_s=timeout_s + wait_s,
        logs_dir=scratch / "logs",
        # the seed on stdin, never in argv: ncu passes its stdin on to the profiled process
        stdin_data=pending,
        user=user,
        # lowest priority: its start-up (ncu, torch and its imports: 6-8 s of CPU) runs beside the
        # judged process's timing, which must not share the CPU with it
        limits=replace(limits or Limits(), niceness=PROFILER_NICENESS),
        on_started=on_started,
    ))
    return ProfilerAhead(process, executable, log_file, user, timeout_s, workdir, home, cache_dir, device,
                         scratch / "logs")


@dataclass
class ProfilerAhead:
    process: started_ahead.StartedAhead
    executable: str
    log_file: Path
    user: object
    timeout_s: float
    workdir: Path  # the profiled process's copy of the bundle
    home: Path  # its home (the JIT caches of Triton or CuPy kernels it built)
    cache_dir: Path
    device: str
    logs: Path  # ncu's stdout and stderr, and the profiled process's, as they are written
    extensions: Path | None = None  # the candidate's build folder, known once the job is (finish_profiler)

    def give_turn(self) -> None:
        """The GPU is free: a profiler started with `gpu_turn` makes its CUDA context and warms ncu up now."""
        self.process.give_turn()

    def said(self, line: str) -> bool:
        """Whether the profiled process has written `line` on its stderr so far (ncu passes it on)."""
        return any(line in path.read_text(errors="replace") for path in self.logs.glob("*.log"))


def give_profiler(started: "ProfilerAhead", seed: int, bundle, candidate: Path, case: str | None = None,
                  calls: int | None = None, gate: Path | None = None) -> None:
    """Give a profiler started ahead its job (the bundle, the candidate, the input case: None for the
    judging's first) and its seed; it runs while the caller goes on (collect_profiler reads it).
    `calls`: how many calls of each model to profile, up to its Profile's started_calls (None: the
    number it was started with). `gate`: it waits for this path to exist before its profiled calls
    (profiled_target.wait_for_gate)."""
    shutil.copytree(bundle.root, started.workdir, dirs_exist_ok=True)  # submission code may write to its cwd
    started.extensions = build_cache.extensions_dir(
        build_cache.reachable_cache_dir(started.cache_dir, started.user), candidate, started.device)
    settings = {"seed": seed, "reference": bundle.reference.name, "candidate": candidate.name,
                "extensions_dir": str(started.extensions), "case": case,
                **({"calls": calls} if calls is not None else {}),
                **({"gate": str(gate)} if gate is not None else {})}
    # the build folder is the candidate's: held from the seed to the end, as the judged process held it
    started.process.hold(build_cache.exclusive(started.extensions))
    privileges.hand_over(started.workdir, started.user)
    privileges.hand_over(started.extensions, started.user)
    # when its start-up began and when its job came: its cost line says whether the job waited for it
    settings |= {"started_at": started.process.started_at, "given_at": time.monotonic()}
    started.process.give(json.dumps(settings).encode())


def collect_profiler(started: "ProfilerAhead") -> ProfilerRun:
    """Wait for a profiler given its job (give_profiler) to end, at most its timeout from now (its
    turn: a gate it waited for is open); what ncu recorded."""
    run = started.process.finish(timeout_s=started.timeout_s)
    if started.process.overran:
        return ProfilerRun(None, note(f"timed out after {started.timeout_s:g} s; ncu and the profiled process "
                                      "were killed"), timed_out=True)
    return interpret_run(run, started.log_file, started.timeout_s, started.executable)


def finish_profiler(started: "ProfilerAhead | ProfilerRun", seed: int, bundle, candidate: Path,
                    case: str | None = None, calls: int | None = None) -> ProfilerRun:
    """give_profiler and collect_profiler at once; a ProfilerRun (ncu missing) as it is."""
    if isinstance(started, ProfilerRun):
        return started
    try:
        give_profiler(started, seed, bundle, candidate, case, calls)
    except BaseException:
        started.process.cancel()
        raise
    return collect_profiler(started)


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
        details = "\n".join(part for part in (_error_lines(output + "\n" + run.stdout), last_lines(run.stderr)) if part)
        return ProfilerRun(None, note(f"ncu or the profiled process failed (exit code {run.exit_code}):\n{details.rstrip()}"))
    timeline = next((line.removeprefix(TIMELINE_PREFIX) for line in run.stderr.splitlines()
                     if line.startswith(TIMELINE_PREFIX)), "")
    return ProfilerRun(output, executable=executable, timeline=timeline)


def run_profiler(
    bundle, candidate: Path, device: str, timeout_s: float, cache_dir: Path, scratch: Path, profile: Profile,
    seed: int, outputs: Path | None = None, executable: str | None = None, limits=None,
) -> ProfilerRun:
    """Run the candidate under ncu in the sandbox, `profile.calls` calls on inputs from `seed`, each
    call's output saved to `outputs` when given (start_profiler and finish_profiler at once)."""
    started = start_profiler(device, timeout_s, cache_dir, scratch, profile, outputs, executable, limits)
    try:
        return finish_profiler(started, seed, bundle, candidate)
    except BaseException:
        if isinstance(started, ProfilerAhead):
            started.process.cancel()
        raise


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
