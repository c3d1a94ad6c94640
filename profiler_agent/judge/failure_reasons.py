"""The one-line reason that goes with every status but `passed` (the result's `reason`): which stage
failed and the error's last line, the limit that was hit, the first trial that went wrong."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from profiler_agent.judge.verdicts import is_memory_error, memory_limit_message
from profiler_agent.sandbox.process import SandboxRun
from profiler_agent.trials import side_streams
from profiler_agent.util.sizes import format_size

MAX_REASON_CHARS = 300
# a compiler's diagnostic ("x.cpp:3:1: error: ...", "x.cu(12): error: ..."), not Python's "RuntimeError:"
COMPILER_ERROR = re.compile(r"\b(?:fatal )?error\b\s*:", re.IGNORECASE)
DIRECTORIES = re.compile(r"(?:/[^\s/:()]+)+/")  # build folders are temporary: keep file names only


@dataclass
class Limits:
    """The limits a judgement ran under, for the reason that names one."""
    run_timeout_s: float
    compile_timeout_s: float
    memory_bytes: int | None = None
    compile_memory_bytes: int | None = None


def one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 1] + "…"


def message_line(text: str) -> str:
    """A message's line that says the most, as a reason: the first, without the harness's prefix;
    the last of a traceback (the exception)."""
    lines = [line.strip() for line in str(text).replace("[profiler_agent] ", "").splitlines() if line.strip()]
    if not lines:
        return ""
    return one_line(lines[-1] if lines[0].startswith("Traceback") else lines[0])


def _last_line(message: str) -> str:
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def describe_exception(error: dict) -> str:
    """'ValueError: bad shape' from a report's error, the message's last line."""
    kind = str(error.get("type") or "error")
    line = _last_line(error.get("message") or "")
    if kind.rsplit(".", 1)[-1] == "SystemExit":
        return f"SystemExit{': ' + line if line else ''} (the code called sys.exit)"
    return f"{kind}: {line}" if line else kind


def _how_it_ended(exit_code: int | None) -> str:
    if exit_code is not None and exit_code < 0:
        try:
            return f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    return f"exit code {exit_code}"


def _compiler_error(compile_log: str) -> str | None:
    for line in compile_log.splitlines():
        if COMPILER_ERROR.search(line):
            return DIRECTORIES.sub("", line.strip())
    return None


def _compile_reason(run: SandboxRun, report: dict | None, compile_log: str, limits: Limits) -> str:
    if run.timed_out:
        limit = run.limit_s if run.limit_s is not None else limits.compile_timeout_s
        return f"compile timed out after {limit:g} s (the compile limit)"
    error = (report or {}).get("error") or {}
    first = _compiler_error(compile_log + "\n" + str(error.get("message") or ""))
    return f"building the extension failed: {first or describe_exception(error)}"


def _memory_reason(run: SandboxRun, report: dict | None, limits: Limits) -> str:
    error = (report or {}).get("error") or {}
    if run.memory_exceeded is not None:  # the agent's watchdog killed the tree: it knows the phase
        return memory_limit_message(run, report, lambda compiling: None)
    if run.oom_kills:
        compiling = run.phase == "compile"
        limit = limits.compile_memory_bytes if compiling else limits.memory_bytes
        return (f"out of memory: the {'compile' if compiling else 'run'} memory limit "
                f"({format_size(limit)}) was reached; the OOM killer ended {run.oom_kills} process(es)")
    if error and is_memory_error(error):
        return f"out of memory in {error.get('stage')}: {describe_exception(error)}"
    return f"the judged process was {_how_it_ended(run.exit_code)} without a report (taken for the OOM killer)"


def _no_report_reason(run: SandboxRun) -> str:
    where = "while importing the candidate" if run.phase == "compile" else "after importing the candidate"
    return (f"the judged process ended ({_how_it_ended(run.exit_code)}) {where}, before it reported: "
            "submission code ended the process (os._exit, a signal, a crash)")


def _error_reason(error: dict) -> str:
    if error.get("origin") != "submission":
        if error.get("type") == "VerifierFailed":  # its message goes on with the verifier's stderr
            lines = str(error.get("message") or "").splitlines()
            return f"the harness failed: {lines[0] if lines else 'the verifier ended without a verdict'}"
        return f"the harness failed in {error.get('stage')}: {describe_exception(error)}"
    return f"{error.get('stage')}: {describe_exception(error)}"


def explain(status: str, run: SandboxRun, report: dict | None, compile_log: str, limits: Limits) -> str | None:
    """The reason for `status` (None for `passed`), decided the way verdicts.classify decided it."""
    if status == "passed":
        return None
    report = report if isinstance(report, dict) else None
    error = (report or {}).get("error") or {}
    if status == "compile_error":
        reason = _compile_reason(run, report, compile_log, limits)
    elif status == "memory_limit":
        reason = _memory_reason(run, report, limits)
    elif status == "timeout":
        limit = run.limit_s if run.limit_s is not None else limits.run_timeout_s
        reason = f"timed out after {limit:g} s (the run limit); the process and its children were killed"
    elif status == "wrong_answer":
        correctness = (report or {}).get("correctness") or {}
        reason = correctness.get("reason") or "the outputs differ from the reference's"
    elif error:
        reason = _error_reason(error)
    elif report is None:
        reason = _no_report_reason(run)
    else:
        reason = status.replace("_", " ")
    return one_line(reason)


def name_first_failure(verdict_correctness: dict, preliminary) -> None:
    """A missing output after the judged process's own check had failed earlier: say so, so the
    reason names the first failure seen (the verifier's verdict stands)."""
    reason = verdict_correctness.get("reason") or ""
    seen = preliminary.get("reason") if isinstance(preliminary, dict) else None
    if "no output" in reason and isinstance(seen, str) and seen:
        verdict_correctness["reason"] = f"{reason}; the judged process had stopped at {one_line(seen)}"


def name_unjoined_stream(verdict_correctness: dict, preliminary) -> None:
    """A wrong answer whose output the judged process saw still being written after the call returned
    (profiler_agent.trials.side_streams): the verifier's verdict stands, and the reason says why."""
    seen = preliminary.get("reason") if isinstance(preliminary, dict) and preliminary.get("passed") is False else None
    if (verdict_correctness.get("passed") is False and isinstance(seen, str) and side_streams.UNJOINED in seen
            and side_streams.UNJOINED not in (verdict_correctness.get("reason") or "")):
        verdict_correctness["reason"] = f"{one_line(seen)}; the verifier: {verdict_correctness.get('reason')}"


def timed_call_failure_stands(verdict_correctness: dict, preliminary) -> None:
    """A wrong timed output the judged process found that the verifier could not check again (values
    made in place, not saved): the candidate's own process declared it, which can only cost the
    candidate, so it stands."""
    seen = preliminary.get("reason") if isinstance(preliminary, dict) and preliminary.get("passed") is False else None
    if verdict_correctness.get("passed") is True and isinstance(seen, str) and seen.startswith("timed call "):
        verdict_correctness["passed"] = False
        verdict_correctness["reason"] = f"{one_line(seen)} (found in the judged process; not saved for the verifier)"


def verifier_note(verdict: dict) -> str:
    """The verifier's notes and wrong-answer reason, for the logs."""
    lines = [f"[profiler_agent] verifier: {note}\n" for note in verdict.get("notes") or []]
    if verdict["correctness"].get("reason"):
        lines.append(f"[profiler_agent] verifier: wrong answer: {verdict['correctness']['reason']}\n")
    return "".join(lines)
