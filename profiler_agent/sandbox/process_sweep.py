"""Making sure every process a judged run started is gone when the run ends.

Killing the run's process group is not enough: a descendant can call setsid() (new session and
group) and double-fork so that it is no longer our child. Three nets catch those:
- the agent becomes a child subreaper (Linux prctl), so orphaned descendants are re-parented to
  it instead of to init, and show up as its children;
- every judged process inherits a per-run marker in its environment, which the sweep looks for;
- members of the run's original session.
The sweep repeats until none is left, because killing one re-parents its own children to us.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MARKER_ENV = "JUDGED_RUN_MARKER"  # a random tag per run, not a secret

# The processes run_sandboxed started that are still running: a run's sweep spares them, so a run
# may start while another is under way (the next judging's processes: judge.warm_pool).
_live_runs: set[int] = set()
_live_runs_lock = threading.Lock()


_spared_always: set[int] = set()  # the agent's own helpers started as children (sandbox.zygote)


def live_runs() -> set[int]:
    with _live_runs_lock:
        return set(_live_runs) | _spared_always


def spare_always(pid: int) -> None:
    with _live_runs_lock:
        _spared_always.add(pid)


def add_live_run(pid: int) -> None:
    with _live_runs_lock:
        _live_runs.add(pid)


def remove_live_run(pid: int) -> None:
    with _live_runs_lock:
        _live_runs.discard(pid)


def become_subreaper() -> bool:
    """Orphaned descendants of our children become our children (Linux only; False elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int) -> bool:
    """SIGKILL this process when its parent dies (Linux prctl; the setting is cleared by a change of
    uid, so call it after dropping privileges). False when the parent is already gone, the caller
    should then exit; True elsewhere than Linux too, where nothing can be done."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return True
    return os.getppid() == parent_pid  # it may have died before the prctl


def process_stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, session id, state) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()  # the command name may hold spaces and ')'
    return int(fields[1]), int(fields[3]), fields[0].decode()


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def children_of(parent: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = process_stat(int(entry))
            if stat and stat[0] == parent:
                found.add(int(entry))
    return found


def run_processes(session: int, marker: str, spared: set[int]) -> set[int]:
    """Live (non-zombie) processes of the run: in its session, carrying its marker, or our
    children that were not there before it started."""
    me, tagged = os.getpid(), f"{MARKER_ENV}={marker}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        stat = process_stat(pid)
        if stat is None or stat[2] == "Z":
            continue
        ppid, sid, _ = stat
        if sid == session or (ppid == me and pid not in spared) or _has_marker(pid, tagged):
            found.add(pid)
    return found


def _reap(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass  # not our child: its own parent (or init) reaps it


def sweep(session: int, marker: str, spared: set[int], patience_s: float = 5.0) -> int:
    """Kill every process of the run, again and again until none is left; returns how many."""
    killed: set[int] = set()
    deadline = time.monotonic() + patience_s
    while True:
        alive = run_processes(session, marker, spared)
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed |= alive
        # orphans re-parented to us (the subreaper) stay zombies until we reap them
        _reap(killed | (children_of(os.getpid()) - spared))
        if not alive or time.monotonic() > deadline:
            return len(killed)
        time.sleep(0.02)
