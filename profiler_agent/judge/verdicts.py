"""Deciding a run's status from how the judged process ended and what it reported."""

from __future__ import annotations

import signal

from profiler_agent.executors.build_cache import BUILD_FAILED
from profiler_agent.sandbox.process import SandboxRun

MEMORY_MESSAGES = ("can't allocate memory", "out of memory", "std::bad_alloc", "cannot allocate memory")
MEMORY_TYPES = ("MemoryError", "OutOfMemoryError")


def is_memory_error(error: dict) -> bool:
    if error.get("type", "").rsplit(".", 1)[-1] in MEMORY_TYPES:
        return True
    message = error.get("message", "").lower()
    return any(text in message for text in MEMORY_MESSAGES)


def classify(run: SandboxRun, report: dict | None) -> str:
    if run.memory_exceeded is not None:
        return "memory_limit"  # the parent's watchdog killed the tree (no cgroup)
    if run.oom_kills and (report is None or report.get("error")):
        return "memory_limit"  # the cgroup's OOM killer ended it (memory.events)
    if report is None:
        if run.timed_out:
            # past the compile limit while importing the candidate or in a later build
            return "compile_error" if run.phase == "compile" else "timeout"
        if run.exit_code == -signal.SIGKILL:
            return "memory_limit"  # we only SIGKILL on timeout; otherwise it was the OOM killer
        return "runtime_error"  # died without a report: a crash (segfault, os._exit) in submission code
    error = report.get("error")
    if error:
        if is_memory_error(error):
            return "memory_limit"
        if error.get("origin") != "submission":
            return "internal_error"
        if BUILD_FAILED in error.get("message", ""):
            return "compile_error"  # at import, or a build started later from __init__ or forward
        return "runtime_error"
    return "passed" if report["correctness"].get("passed") else "wrong_answer"


# What the child was doing when an error came, in words (a MemoryError's stage)
_ERROR_STAGE_WORDS = {
    "load_reference": "while importing the reference (build phase)",
    "load_candidate": "while importing the candidate (build phase)",
    "build_models": "while constructing the models, in __init__ (run phase)",
    "candidate": "while calling the candidate, in forward (run phase)",
    "reference": "while calling the reference, in forward (run phase)",
    "get_inputs": "while drawing the inputs (run phase)",
    "kernel_census": "while profiling one call of each model, in forward (run phase)",
}


def stage_words(stage: str) -> str:
    """A stage in words: "candidate (trial 1)" -> "while calling the candidate, in forward (run
    phase), at trial 1" (the trials name their call in parentheses)."""
    base, _, detail = stage.partition(" (")
    words = _ERROR_STAGE_WORDS.get(base)
    if words is None:
        return f"in {stage}"
    return f"{words}, at {detail[:-1] if detail.endswith(')') else detail}" if detail else words


def memory_limit_message(run: SandboxRun, report: dict | None, limit_of_phase) -> str:
    """Why a run got memory_limit, naming the phase: "memory limit 4 GiB exceeded while importing the
    candidate (build phase): 12.1 GiB resident". `limit_of_phase(compile: bool)` gives the limit in
    force."""
    from profiler_agent.util.sizes import format_size

    exceeded = run.memory_exceeded
    if exceeded is not None:
        return (f"memory limit {format_size(exceeded.limit_bytes)} exceeded {exceeded.phase}: "
                f"{format_size(exceeded.resident_bytes)} resident")
    compile_phase = run.phase == "compile"
    limit = limit_of_phase(compile_phase)
    limit_text = f"memory limit {format_size(limit)}" if limit else "memory"
    if run.oom_kills:
        where = run.ended_in or ("in the build phase" if compile_phase else "in the run phase")
        return f"{limit_text} exceeded {where}: the OOM killer ended {run.oom_kills} process(es) of the run"
    error = (report or {}).get("error") or {}
    if error:
        return f"{limit_text} exceeded {stage_words(str(error.get('stage')))}: {error.get('type')}"
    return f"{limit_text} exceeded: the process was killed (SIGKILL) without a report"
