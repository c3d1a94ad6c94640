"""Running one untrusted command: its own session, rlimits, a cgroup where one can be made
(profiler_agent.sandbox.cgroup) or else a watchdog over its memory (profiler_agent.sandbox.memory_watchdog),
an allowlisted environment, wall-clock limits (one, or a compile limit then a run limit), output to capped log files, an optional pipe that carries its report back, and a
sweep that leaves no descendant behind (profiler_agent.sandbox.process_sweep). An order to stop the
judging (profiler_agent.sandbox.judging_stop) ends the run as a timeout would, then raises JudgingStopped."""

from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable
from pathlib import Path

from profiler_agent.sandbox import cgroup, judging_stop, privileges, zygote
from profiler_agent.sandbox.limits import Limits, apply_limits, limit_figures
from profiler_agent.sandbox import process_sweep, run_cpu
from profiler_agent.sandbox.child_channel import TURN_LINE
from profiler_agent.sandbox.memory_watchdog import MemoryExceeded, MemoryWatchdog
from profiler_agent.sandbox.phase_limits import Clock, MessageSplitter
from profiler_agent.sandbox.capped_logs import read_capped

MAX_REPORT_BYTES = 32 * 1024 * 1024

class PendingInput:
    """The stdin of a process started ahead of its turn (profiler_agent.judge.started_ahead): it waits,
    blocked reading its settings, until `send` gives them; `cancel` closes its stdin with nothing,
    and the run ends at once; `kill` ends one that has its input. Its limits count from the moment
    its input comes. `give_turn` writes a line before them (child_channel.read_turn_or_settings): the
    GPU is free for its setup now."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._turn = threading.Event()
        self._data: bytes | None = None
        self._proc: subprocess.Popen | None = None
        self._killed = False
        self.cancelled = False

    def send(self, data: bytes) -> None:
        self._data = data
        self._ready.set()

    def give_turn(self) -> None:
        """Its turn at the GPU, before its settings: written as soon as it is waiting (within 50 ms)."""
        self._turn.set()

    def cancel(self) -> None:
        self.cancelled = True
        self._ready.set()

    def kill(self) -> None:
        """Its input was sent and it is not needed after all: its session is killed now (the run
        ends as a killed process; its limits and sweep still apply)."""
        self._killed = True  # before it has even read them: it never gets them
        if self._proc is not None and self._proc.poll() is None:
            kill_session(self._proc.pid)

    def alive(self) -> bool:
        """Its process has not ended (True before it exists)."""
        return self._proc is None or self._proc.poll() is None

    def given(self) -> bool:
        """Sent or cancelled."""
        return self._ready.is_set()

    def wait(self, proc: subprocess.Popen) -> bytes | None:
        """The input, or None when cancelled or when the process ended while waiting."""
        self._proc = proc
        turned = False
        while not self._ready.wait(0.05):
            if proc.poll() is not None:
                return None
            if self._turn.is_set() and not turned:
                turned = True
                try:
                    proc.stdin.write(TURN_LINE)
                    proc.stdin.flush()
                except OSError:
                    pass  # it ended meanwhile: the next poll sees it
        return self._data if proc.poll() is None and not self._killed else None


def _start(command: list[str], *, cwd: Path, env: dict[str, str], stdout, stderr, pass_fds: tuple[int, ...],
           figures: dict, forks: zygote.Zygote | None):
    """The run's process: a fork of the zygote (sandbox.zygote) for `python -m` commands where one
    runs, else fork and exec. Either way apply_limits runs in it first."""
    if forks is not None:
        stderr_fd = stdout.fileno() if stderr == subprocess.STDOUT else stderr.fileno()
        fds = {1: stdout.fileno(), 2: stderr_fd, **{fd: fd for fd in pass_fds}}
        return forks.spawn(*zygote.module_of(command), cwd=str(cwd), env=env, fds=fds, limits=figures)
    parent = os.getpid()
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        pass_fds=pass_fds,
        start_new_session=True,  # own session and process group: one killpg ends it all
        close_fds=True,
        preexec_fn=lambda: apply_limits(figures, parent),
    )


@dataclass
class SandboxRun:
    exit_code: int | None  # negative: killed by that signal; None: still running when killed
    timed_out: bool
    report: bytes | None  # what came over the result pipe (None without a pipe or when empty)
    stdout: str
    stderr: str
    wall_s: float
    swept: int = 0  # descendants still alive when the run ended, killed by the sweep
    phase: str | None = None  # with a compile limit: "compile" or "run", the phase it ended in
    compile_s: float | None = None  # with a compile limit: until "compiled" came (or the end, if never),
    # plus the builds started later (from __init__ or forward)
    limit_s: float | None = None  # the wall-clock limit in force at the end (the one exceeded, if timed out)
    cgroup: str | None = None  # the cgroup it ran in
    cgroup_controllers: tuple[str, ...] = ()  # enabled for it: memory, and pids where available
    no_cgroup: str | None = None  # why it ran in none
    oom_kills: int = 0  # processes of the run the OOM killer ended (cgroup only)
    memory_peak_bytes: int | None = None  # the cgroup's memory.peak, or the watchdog's highest sample
    memory_exceeded: MemoryExceeded | None = None  # the watchdog killed it (no cgroup)
    ended_in: str | None = None  # where it was when it ended, in words ("while ... (run phase)")
    cancelled: bool = False  # started ahead of its turn, then not needed (PendingInput.cancel)
    ended_waiting: bool = False  # started ahead of its turn, it ended before its input came (not its job's doing)
    stage_cpu: dict[str, run_cpu.CpuSample] = field(default_factory=dict)  # with cpu_at_stages: at each stage's message


def kill_session(pid: int) -> None:
    """Kill every process of the session the child leads (its process group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_pipe(fd: int, clock: Clock, proc: subprocess.Popen, on_limits_changed,
               on_stage: Callable[[str], None] | None = None) -> tuple[bytes, bool]:
    """Read until EOF, the child's exit, or the deadline; True when it ended in time. The child's
    exit counts as the end: a descendant that inherited the write end must not hold us open. Phase
    messages move the clock (and call on_limits_changed when the limits in force change, on_stage
    when the child names a new stage); every one is cut from the data."""
    chunks, size = [], 0
    exited = False
    splitter = MessageSplitter()

    def data() -> bytes:
        return b"".join(chunks)

    while True:
        judging_stop.raise_if_requested()
        remaining = clock.deadline() - time.monotonic()
        if remaining <= 0:
            return data(), False
        ready, _, _ = select.select([fd], [], [], 0 if exited else min(remaining, judging_stop.POLL_S))
        if not ready:
            if exited:
                return data(), True
            exited = proc.poll() is not None  # one more pass drains what it wrote before exiting
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return data(), True
        report_bytes, messages = splitter.feed(chunk)
        stage = clock.stage
        if any([clock.on_message(message) for message in messages]):
            on_limits_changed()
        if on_stage is not None and clock.stage != stage:
            on_stage(clock.stage)
        size += len(report_bytes)
        if size <= MAX_REPORT_BYTES:  # past the cap keep draining, so the child is never blocked
            chunks.append(report_bytes)


def _wait_for_exit(proc, clock: Clock) -> None:
    """Until the process exits (subprocess.TimeoutExpired at the deadline), looking for an order to stop."""
    while True:
        remaining = clock.deadline() - time.monotonic()
        try:
            proc.wait(timeout=max(0.0, min(remaining, judging_stop.POLL_S)))
            return
        except subprocess.TimeoutExpired:
            if remaining <= judging_stop.POLL_S:
                raise
            judging_stop.raise_if_requested()


def _make_cgroup(limits: Limits, phased: bool) -> tuple[cgroup.JudgedCgroup | None, str | None]:
    """The run's cgroup, or None and why not."""
    try:
        where = cgroup.hierarchy()
        first_memory = limits.compile_memory_bytes if phased else limits.memory_bytes
        return cgroup.JudgedCgroup.create(where, first_memory, limits.extra_processes), None
    except cgroup.Unavailable as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"the run's cgroup could not be made: {exc}"


def run_sandboxed(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    logs_dir: Path,
    stdin_data: bytes | PendingInput = b"",
    result_pipe: bool = False,
    merge_stderr: bool = False,
    limits: Limits = Limits(),
    user: privileges.SandboxUser | None = None,
    compile_timeout_s: float | None = None,
    on_started: Callable[[], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    cpu_at_stages: bool = False,
    fresh_interpreter: bool = False,
) -> SandboxRun:
    """Run `command`; with result_pipe, `--result-fd N` is appended and the child writes its report
    to fd N. With compile_timeout_s the run has phases (profiler_agent.sandbox.phase_limits.Clock):
    compile_timeout_s and limits.compile_memory_bytes until the child sends child_channel.PHASE_COMPILED on that
    pipe (and during later builds it announces), timeout_s and limits.memory_bytes otherwise. Everything the run started is killed when it ends, on
    timeout or not. A PendingInput as stdin_data starts the process ahead of its turn: the limits
    count from when its input is sent; `on_started` is called once the process exists (runs started
    after that spare it in their sweep); `on_stage` with each stage the child names on the pipe
    (phases.STAGE_WORDS: informative only, whatever runs in the child can send them). With
    cpu_at_stages the run's CPU time is sampled as each stage's message arrives, before on_stage.
    fresh_interpreter: exec'd, never forked from the zygote (whose libraries read their environment
    when it started)."""
    if compile_timeout_s is not None and not result_pipe:
        raise ValueError("a compile limit needs the result pipe, which carries the phase message")
    logs_dir.mkdir(parents=True, exist_ok=True)
    logs_dir.chmod(0o700)  # what the run printed: its own and the agent's, not another uid's on this host
    stdout_path, stderr_path = logs_dir / "stdout.log", logs_dir / "stderr.log"
    read_fd = write_fd = None
    if result_pipe:
        read_fd, write_fd = os.pipe()
        command = [*command, "--result-fd", str(write_fd)]
    process_sweep.become_subreaper()
    # started before the spared set is taken (and spared by every run: live_runs)
    forks = zygote.shared() if zygote.module_of(command) and not fresh_interpreter else None
    spared = process_sweep.children_of(os.getpid())
    marker = secrets.token_hex(8)
    env = {**env, process_sweep.MARKER_ENV: marker}
    judged_cgroup, no_cgroup = _make_cgroup(limits, compile_timeout_s is not None)
    wall_limit_s = timeout_s + (compile_timeout_s or 0.0)
    started = time.monotonic()
    phased = compile_timeout_s is not None
    clock = Clock(started, timeout_s, compile_timeout_s, limits.memory_bytes,
                  limits.compile_memory_bytes if phased else limits.memory_bytes)

    def on_limits_changed() -> None:
        if judged_cgroup is not None:
            judged_cgroup.set_memory_max(clock.memory_limit())

    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = _start(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT if merge_stderr else err,
                          pass_fds=(write_fd,) if result_pipe else (),
                          figures=limit_figures(limits, wall_limit_s, user, judged_cgroup and judged_cgroup.procs_file),
                          forks=forks)
        except BaseException:
            if judged_cgroup is not None:
                judged_cgroup.remove()
            raise
        finally:
            if write_fd is not None:
                os.close(write_fd)  # the child holds the only write end now, so EOF means it is done
    process_sweep.add_live_run(proc.pid)
    if on_started is not None:
        on_started()
    report = None
    stage_cpu: dict[str, run_cpu.CpuSample] = {}
    timed_out = False
    watchdog = None
    cancelled = ended_waiting = False
    if isinstance(stdin_data, PendingInput):
        pending, stdin_data = stdin_data, stdin_data.wait(proc)
        cancelled = stdin_data is None
        ended_waiting = cancelled and not pending.cancelled
        started = time.monotonic()  # its limits count from here
        clock = Clock(started, timeout_s, compile_timeout_s, limits.memory_bytes,
                      limits.compile_memory_bytes if phased else limits.memory_bytes)
    if judged_cgroup is None and (limits.memory_bytes or limits.compile_memory_bytes):
        # no memory controller: the parent watches the tree's resident memory itself
        watchdog = MemoryWatchdog(proc.pid, lambda: spared | process_sweep.live_runs(),
                                  lambda: (clock.memory_limit(), clock.phase_words())).start()
    try:
        try:
            proc.stdin.write(stdin_data or b"")
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the child exited without reading its settings; its exit code tells why
        if cancelled:
            pass  # killed below
        elif read_fd is not None:
            def staged(stage: str) -> None:
                if cpu_at_stages and stage not in stage_cpu:
                    stage_cpu[stage] = run_cpu.sample(process_sweep.run_processes(proc.pid, marker, spared),
                                                      judged_cgroup and str(judged_cgroup.path))
                if on_stage is not None:
                    on_stage(stage)

            data, complete = _read_pipe(read_fd, clock, proc, on_limits_changed,
                                        staged if on_stage is not None or cpu_at_stages else None)
            report = data if complete and data else None
        try:
            if not cancelled:
                _wait_for_exit(proc, clock)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:  # also when the judging was ordered to stop (JudgingStopped goes on once all is ended)
        ended = time.monotonic()
        if watchdog is not None:
            watchdog.stop()
        kill_session(proc.pid)
        if judged_cgroup is not None:
            judged_cgroup.kill()  # everything in it, escaped sessions included
        exit_code = proc.wait()
        process_sweep.remove_live_run(proc.pid)
        # the net where no cgroup could be made; the agent's other runs, started before or after, are spared
        swept = process_sweep.sweep(proc.pid, marker, spared | process_sweep.live_runs())
        oom_kills, peak = 0, None
        if judged_cgroup is not None:
            oom_kills, peak = judged_cgroup.oom_kills(), judged_cgroup.memory_peak()
            judged_cgroup.remove()
        if read_fd is not None:
            os.close(read_fd)
    compile_s = clock.compile_used_s(ended) if clock.phased else None
    exceeded = watchdog.exceeded if watchdog is not None else None
    return SandboxRun(
        exit_code=None if timed_out else exit_code,
        timed_out=timed_out and exceeded is None,
        report=report,
        stdout=read_capped(stdout_path),
        stderr="" if merge_stderr else read_capped(stderr_path),
        wall_s=time.monotonic() - started,
        swept=swept,
        phase=("compile" if clock.in_compile_phase() else "run") if clock.phased else None,
        compile_s=compile_s,
        limit_s=clock.limit_s(),
        cgroup=str(judged_cgroup.path) if judged_cgroup is not None else None,
        cgroup_controllers=judged_cgroup.controllers if judged_cgroup is not None else (),
        no_cgroup=no_cgroup,
        oom_kills=oom_kills,
        memory_peak_bytes=peak if watchdog is None else watchdog.peak_bytes,
        memory_exceeded=exceeded,
        ended_in=clock.phase_words(),
        cancelled=cancelled,
        ended_waiting=ended_waiting,
        stage_cpu=stage_cpu,
    )
