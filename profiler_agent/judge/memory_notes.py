"""What the result says about memory: which mechanism limited it, and, with memory_limit, what was
exceeded in which phase."""

from __future__ import annotations

from profiler_agent.judge.options import JudgeOptions
from profiler_agent.judge.verdicts import memory_limit_message
from profiler_agent.sandbox import memory_watchdog
from profiler_agent.sandbox.process import SandboxRun
from profiler_agent.util.sizes import format_size


def memory_note(run: SandboxRun, options: JudgeOptions, status: str, report: dict | None = None) -> str:
    """Which mechanism limited memory, when a limit was asked for or the run ran out of it; with
    memory_limit, what was exceeded in which phase."""
    if not (options.memory_limit_bytes or options.compile_memory_limit_bytes or status == "memory_limit"):
        return ""
    limits = (f"{format_size(options.compile_memory_limit())} while compiling, "
              f"{format_size(options.memory_limit_bytes)} after")
    if run.cgroup:
        note = (f"cgroup v2 memory.max {limits}, no swap; "
                f"peak {format_size(run.memory_peak_bytes) if run.memory_peak_bytes else 'unknown'}")
        if "pids" in run.cgroup_controllers:
            note += "; cgroup controllers: memory, pids"
        else:
            note += "; cgroup controllers: memory (pids not available: RLIMIT_NPROC only)"
        if run.oom_kills:
            note += f"; the OOM killer ended {run.oom_kills} process(es)"
    elif options.memory_limit_bytes or options.compile_memory_limit_bytes:
        note = (f"the agent watched the resident memory of the process tree every "
                f"{memory_watchdog.SAMPLE_INTERVAL_S * 1000:g} ms: {limits}; peak "
                f"{format_size(run.memory_peak_bytes) if run.memory_peak_bytes else 'unknown'} "
                f"(no cgroup: {run.no_cgroup})")
        if options.device == "cpu" and options.memory_limit_bytes:
            note += f"; and RLIMIT_AS {format_size(options.memory_limit_bytes)} beyond what the build left mapped"
        elif options.device == "cuda":
            note += "; GPU memory is not resident memory: the device's own limits hold it"
    else:
        note = f"not limited (no cgroup: {run.no_cgroup})"
    if status == "memory_limit":
        limit_of_phase = lambda compile_phase: (  # noqa: E731
            options.compile_memory_limit() if compile_phase else options.memory_limit_bytes)
        return f"[profiler_agent] {memory_limit_message(run, report, limit_of_phase)}\n[profiler_agent] memory: {note}\n"
    return f"[profiler_agent] memory: {note}\n"
