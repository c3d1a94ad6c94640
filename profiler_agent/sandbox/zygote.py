"""A process that imports torch once and forks the sandbox's Python commands from it: the agent's
side (starting it, asking for forks, waiting on them); the process itself is
profiler_agent.sandbox.zygote_server.

Every judging starts Python processes that import torch (the judged process, the verifier, the
self-test, the trusted check): 1.2-5.7 s of CPU each, most of a cached judging's cost on a CPU host and
about 46% of the test suite's CPU (docs/performance.md). The agent starts this process once
(`python -m profiler_agent.sandbox.zygote_server`, an allowlisted environment: no agent secret is in its
memory), it imports torch and waits; a command `[python, -m, module, args...]` is then a fork of it
that applies exactly what `sandbox.process` applies between fork and exec (its own session, the
run's cgroup, the sandbox uid, death with its parent, rlimits), takes the run's files as its
stdin/stdout/stderr and pass_fds, its environment and cwd, and runs the module as `__main__`.

Only the agent can ask for a fork: the request channel is one end of a socketpair the agent made
(no path to connect to), and a forked command closes every descriptor it was not given. The zygote
never makes a CUDA context (importing torch does not), so its forks may. It dies with the agent.
When a fork ends, the zygote reaps it and writes its wait status to the exit pipe the agent gave with
the request; the agent side (`ZygoteProcess`) reads it as `subprocess.Popen` reads waitpid.
PROFILER_AGENT_ZYGOTE=0 turns it off (plain fork and exec).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading

ZYGOTE_ENV = "PROFILER_AGENT_ZYGOTE"
# torch alone: torch.utils.cpp_extension's import asks torch.cuda.is_available(), after which a fork may not
# use CUDA ("Cannot re-initialize CUDA in forked subprocess", seen on the H100)
PRELOAD = ("torch",)
MAX_REQUEST_BYTES = 1 << 20
MAX_FDS = 16
# Room in the zygote's argument and environment areas, which a fork overwrites with its own command
# and environment: /proc/<pid>/cmdline and environ then read as an exec'd process's would (the
# sweep finds a run's processes by the marker in their environment: sandbox.process_sweep).
ROOM_BYTES = 64 * 1024
PAD_ENV = "PROFILER_AGENT_ZYGOTE_ROOM"
STATUS = struct.Struct("=i")
SET_UP_TIMEOUT_S = 10.0


def enabled() -> bool:
    return os.environ.get(ZYGOTE_ENV, "1") != "0" and sys.platform.startswith("linux")


def module_of(command: list[str]) -> tuple[str, list[str]] | None:
    """(module, args) of a command the zygote can run: this interpreter with `-m module`."""
    if len(command) >= 3 and command[0] == sys.executable and command[1] == "-m":
        return command[2], command[3:]
    return None


# --- the agent's side ------------------------------------------------------------------------------

class ZygoteProcess:
    """A fork of the zygote, as much of subprocess.Popen as sandbox.process uses."""

    def __init__(self, pid: int, stdin, exit_fd: int) -> None:
        self.pid = pid
        self.stdin = stdin
        self.returncode: int | None = None
        self._exit_fd = exit_fd

    def _status(self, timeout: float | None) -> bool:
        if self.returncode is not None:
            return True
        ready, _, _ = select.select([self._exit_fd], [], [], timeout)
        if not ready:
            return False
        data = os.read(self._exit_fd, STATUS.size)
        os.close(self._exit_fd)
        # the zygote wrote the wait status; nothing written: it died, and the fork with it
        whole = len(data) == STATUS.size
        self.returncode = os.waitstatus_to_exitcode(STATUS.unpack(data)[0]) if whole else -signal.SIGKILL
        return True

    def poll(self) -> int | None:
        self._status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._status(timeout):
            raise subprocess.TimeoutExpired(f"zygote fork {self.pid}", timeout)
        return self.returncode


class Zygote:
    """The agent's handle on its zygote: started on first use, one per agent process."""

    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket = ours
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "profiler_agent.sandbox.zygote_server", str(theirs.fileno()), str(os.getpid()),
             " " * ROOM_BYTES],
            env={**env, PAD_ENV: " " * ROOM_BYTES}, stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
            close_fds=True)
        theirs.close()
        ready = self._socket.recv(64)  # torch imported
        if ready != b"ready":
            raise OSError(f"the zygote did not start ({ready!r})")

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, module: str, args: list[str], *, cwd: str, env: dict[str, str], fds: dict[int, int],
              limits: dict) -> ZygoteProcess:
        """Fork `python -m module args` with these descriptors (target number -> ours), limits
        (sandbox.limits.limit_figures). Its stdin is a new pipe, returned as `.stdin`."""
        stdin_read, stdin_write = os.pipe()
        exit_read, exit_write = os.pipe()
        try:
            targets = sorted(fds)
            request = json.dumps({"module": module, "args": args, "cwd": cwd, "env": env,
                                  "targets": [0, *targets], "limits": limits}).encode()
            with self._lock:
                socket.send_fds(self._socket, [request], [exit_write, stdin_read, *(fds[t] for t in targets)])
                reply = json.loads(self._socket.recv(4096) or b"{}")
        finally:
            os.close(stdin_read)
            os.close(exit_write)
        if not isinstance(reply.get("pid"), int):
            os.close(stdin_write)
            os.close(exit_read)
            raise OSError(f"the zygote could not fork: {reply.get('error', 'no answer')}")
        return ZygoteProcess(reply["pid"], os.fdopen(stdin_write, "wb"), exit_read)


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked agent (RQ's work-horse) starts its own: its parent's channel is its parent's."""
    global _zygote, _zygote_lock
    if _zygote is not None:
        _zygote._socket.close()
    _zygote, _zygote_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def shared() -> Zygote | None:
    """This agent process's zygote, started on first use (and again if it died); None when off or
    it could not start (commands are then forked and exec'd)."""
    global _zygote
    if not enabled():
        return None
    with _zygote_lock:
        if _zygote is None or not _zygote.alive():
            from profiler_agent.sandbox import child_env, process_sweep

            home = new_home()
            # the allowlist: nothing of the agent's secrets, and no run's marker (sandbox.process_sweep)
            _zygote = _start_from_a_lasting_thread(child_env.child_env(home, home, None))
            if _zygote is None:
                return None
            process_sweep.spare_always(_zygote.process.pid)  # no run's sweep may take it for one of its own
        return _zygote


HOME_PREFIX = "profiler-agent-zygote-"


def new_home():
    """The zygote's home: a folder named by this agent's pid, removed when the agent exits; those of
    agents that ended without removing theirs (killed, or RQ's work-horse, which leaves by os._exit)
    are removed first. One was left behind per judging."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    remove_homes_of_ended_agents(Path(tempfile.gettempdir()))
    home = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, home, True)
    return home


def remove_homes_of_ended_agents(folder) -> int:
    """Removes this user's zygote homes (in `folder`) whose agent process is gone; how many."""
    import re
    import shutil

    removed = 0
    for path in folder.glob(f"{HOME_PREFIX}*"):
        named = re.fullmatch(r"(\d+)-\w+", path.name[len(HOME_PREFIX):])
        try:
            mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
        except OSError:
            continue
        if named and mine and not _alive(int(named.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_from_a_lasting_thread(env: dict[str, str]) -> Zygote | None:
    """The zygote dies with its parent (PR_SET_PDEATHSIG), and for the kernel its parent is the
    thread that started it: a run's thread ends with the run. So a thread that lasts as long as the
    agent starts it."""
    started: list = []
    done = threading.Event()

    def keeper() -> None:
        try:
            started.append(Zygote(env))
        except OSError as exc:
            print(f"[profiler_agent] zygote: not used: {exc}", file=sys.stderr)
        done.set()
        threading.Event().wait()  # never returns: the zygote's parent thread must outlive it

    threading.Thread(target=keeper, name="profiler-agent-zygote", daemon=True).start()
    done.wait()
    return started[0] if started else None
