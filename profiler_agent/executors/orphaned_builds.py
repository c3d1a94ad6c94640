"""Builders a dead judged process left running in its build folder.

A judged process dies with its agent (the sandbox's parent-death signal), but the ninja and compilers it
started do not: killed with `kill -9` while a build ran, an agent left them writing into the folder after
its lock was gone. The next judging of the same source then ran a second ninja beside them, and the two
corrupted ninja's deps log (every later judging built again) or could load a half-written library.
Whoever takes the folder's lock (build_cache.exclusive) ends them first: while the lock is held no one
else may work there, so whatever does is such a leftover.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

# Fields of /proc/<pid>/stat after the command's closing parenthesis: state, ppid, pgrp, session, tty_nr.
TTY_FIELD = 4


def working_in(folder: Path) -> list[int]:
    """Pids of the processes without a terminal whose working directory is `folder` or below it (ninja and
    the compilers run there). One with a terminal is a person's shell, left alone; zombies have no
    working directory and are not listed."""
    root = os.path.realpath(folder)
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                tty = int(stat.read().rsplit(b")", 1)[1].split()[TTY_FIELD])
        except (OSError, ValueError, IndexError):  # gone, another user's, or not readable
            continue
        if tty == 0 and (cwd == root or cwd.startswith(root + os.sep)):
            found.append(int(entry.name))
    return found


def end_in(folder: Path, wait_s: float = 10.0) -> list[int]:
    """Kill the processes working in `folder` and wait until none is left (at most `wait_s`); returns
    their pids. Call it only while holding the folder's lock."""
    ended = working_in(folder)
    for pid in ended:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + wait_s
    while ended and working_in(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    return ended
