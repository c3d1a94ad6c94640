"""Deciding a run's status from how the judged process ended and what it reported."""

from __future__ import annotations

import signal

from profiler_agent.sandbox.process import SandboxRun

BUILD_FAILED = "Error building extension"  # torch.utils.cpp_extension's message when ninja fails
MEMORY_MESSAGES = ("can't allocate memory", "out of memory", "std::bad_alloc", "cannot allocate memory")
MEMORY_TYPES = ("MemoryError", "OutOfMemoryError")


def is_memory_error(error: dict) -> bool:
    if error.get("type", "").rsplit(".", 1)[-1] in MEMORY_TYPES:
        return True
    message = error.get("message", "").lower()
    return any(text in message for text in MEMORY_MESSAGES)


def classify(run: SandboxRun, report: dict | None) -> str:
    if run.oom_kills and (report is None or report.get("error")):
        return "memory_limit"  # the cgroup's OOM killer ended it (memory.events)
    if report is None:
        if run.timed_out:
            # past the compile limit while importing the candidate (where load_inline builds)
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
        if error.get("stage") == "load_candidate" and BUILD_FAILED in error.get("message", ""):
            return "compile_error"
        return "runtime_error"
    return "passed" if report["correctness"].get("passed") else "wrong_answer"
