"""Running one untrusted command: its own session, rlimits, an allowlisted environment, a
wall-clock limit, output to capped log files, an optional pipe that carries its report back, and a
sweep that leaves no descendant behind (profiler_agent.reaper)."""

from __future__ import annotations

import os
import resource
import secrets
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from profiler_agent import privileges, reaper
from profiler_agent.logcap import read_capped

MAX_REPORT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """rlimits of a judged process. Processes count per uid (threads included) and root is exempt,
    so the count is added on top of what the uid already runs."""

    extra_processes: int = 4096
    file_size_bytes: int = 16 * 1024**3
    cpu_s: int | None = None  # None: wall-clock limit x CPU count (a compile is parallel)


def _uid_tasks(uid: int) -> int:
    """Threads and processes `uid` runs now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return count


def _limiter(limits: Limits, timeout_s: float, user: privileges.SandboxUser | None):
    nproc = _uid_tasks(user.uid if user else os.getuid()) + limits.extra_processes
    cpu = limits.cpu_s or int(timeout_s * (os.cpu_count() or 1)) + 10

    def apply() -> None:  # runs in the child between fork and exec
        if user is not None:
            privileges.drop_to(user)
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


@dataclass
class SandboxRun:
    exit_code: int | None  # negative: killed by that signal; None: still running when killed
    timed_out: bool
    report: bytes | None  # what came over the result pipe (None without a pipe or when empty)
    stdout: str
    stderr: str
    wall_s: float
    swept: int = 0  # descendants still alive when the run ended, killed by the sweep


def kill_session(pid: int) -> None:
    """Kill every process of the session the child leads (its process group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_pipe(fd: int, deadline: float, proc: subprocess.Popen) -> tuple[bytes, bool]:
    """Read until EOF, the child's exit, or the deadline; True when it ended in time. The child's
    exit counts as the end: a descendant that inherited the write end must not hold us open."""
    chunks, size = [], 0
    exited = False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        ready, _, _ = select.select([fd], [], [], 0 if exited else min(remaining, 0.1))
        if not ready:
            if exited:
                return b"".join(chunks), True
            exited = proc.poll() is not None  # one more pass drains what it wrote before exiting
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
    limits: Limits = Limits(),
    user: privileges.SandboxUser | None = None,
) -> SandboxRun:
    """Run `command`; with result_pipe, `--result-fd N` is appended and the child writes its report
    to fd N. The whole session is killed when the run ends, on timeout or not."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = logs_dir / "stdout.log", logs_dir / "stderr.log"
    read_fd = write_fd = None
    if result_pipe:
        read_fd, write_fd = os.pipe()
        command = [*command, "--result-fd", str(write_fd)]
    reaper.become_subreaper()
    spared = reaper.children_of(os.getpid())
    marker = secrets.token_hex(8)
    env = {**env, reaper.MARKER_ENV: marker}
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
                preexec_fn=_limiter(limits, timeout_s, user),
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
            data, complete = _read_pipe(read_fd, deadline, proc)
            report = data if complete and data else None
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        kill_session(proc.pid)
        exit_code = proc.wait()
        swept = reaper.sweep(proc.pid, marker, spared)
        if read_fd is not None:
            os.close(read_fd)
    return SandboxRun(
        exit_code=None if timed_out else exit_code,
        timed_out=timed_out,
        report=report,
        stdout=read_capped(stdout_path),
        stderr="" if merge_stderr else read_capped(stderr_path),
        wall_s=time.monotonic() - started,
        swept=swept,
    )
