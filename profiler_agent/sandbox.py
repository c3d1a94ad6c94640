"""Running one untrusted command: its own session, an allowlisted environment, a wall-clock limit,
output to capped log files, and an optional private pipe that carries its report back."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from profiler_agent.logcap import read_capped

MAX_REPORT_BYTES = 32 * 1024 * 1024


@dataclass
class SandboxRun:
    exit_code: int | None  # negative: killed by that signal; None: still running when killed
    timed_out: bool
    report: bytes | None  # what came over the result pipe (None without a pipe or when empty)
    stdout: str
    stderr: str
    wall_s: float


def kill_session(pid: int) -> None:
    """Kill every process of the session the child leads (its process group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_pipe(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Read until EOF or the deadline; True when EOF came in time."""
    chunks, size = [], 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), True
        size += len(chunk)
        if size <= MAX_REPORT_BYTES:  # past the cap keep draining, so the child is never blocked
            chunks.append(chunk)


def run_sandboxed(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    logs_dir: Path,
    stdin_data: bytes = b"",
    result_pipe: bool = False,
    merge_stderr: bool = False,
) -> SandboxRun:
    """Run `command`; with result_pipe, `--result-fd N` is appended and the child writes its report
    to fd N. The whole session is killed when the run ends, on timeout or not."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = logs_dir / "stdout.log", logs_dir / "stderr.log"
    read_fd = write_fd = None
    if result_pipe:
        read_fd, write_fd = os.pipe()
        command = [*command, "--result-fd", str(write_fd)]
    started = time.monotonic()
    deadline = started + timeout_s
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT if merge_stderr else err,
                pass_fds=(write_fd,) if result_pipe else (),
                start_new_session=True,  # own session and process group: one killpg ends it all
                close_fds=True,
            )
        finally:
            if write_fd is not None:
                os.close(write_fd)  # the child holds the only write end now, so EOF means it is done
    report = None
    timed_out = False
    try:
        try:
            proc.stdin.write(stdin_data)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the child exited without reading its settings; its exit code tells why
        if read_fd is not None:
            data, complete = _read_pipe(read_fd, deadline)
            report = data if complete and data else None
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        kill_session(proc.pid)
        exit_code = proc.wait()
        if read_fd is not None:
            os.close(read_fd)
    return SandboxRun(
        exit_code=None if timed_out else exit_code,
        timed_out=timed_out,
        report=report,
        stdout=read_capped(stdout_path),
        stderr="" if merge_stderr else read_capped(stderr_path),
        wall_s=time.monotonic() - started,
    )
