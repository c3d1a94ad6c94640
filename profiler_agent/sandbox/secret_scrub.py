"""Blanking the agent's secrets in its own /proc/self/environ and cmdline.

A judged process running as root (no uid switch possible) or as the agent's uid can read
/proc/<agent>/environ and cmdline. Those files show the memory the kernel set up at exec, not
Python's os.environ (a copy made at start-up), so overwriting that memory in place hides the
secrets from them while the agent itself keeps using os.environ.
"""

from __future__ import annotations

import os
import re

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|AUTH|CREDENTIAL|COOKIE|URL|SITE|REDIS|DATABASE|PROFILER_AGENT", re.I)
SECRET_OPTIONS = (b"--token", b"--site", b"--redis")
# The agent's settings that are no secret and that the processes it starts (another agent command, a
# bench script's) must read as set: blanked, they would read "***" and refuse it.
NOT_SECRET = frozenset({"PROFILER_AGENT_TIMING_BUDGET"})  # judge.options.TIMING_BUDGET_ENV


def _bounds(stat: bytes, first_field: int) -> tuple[int, int]:
    """Two consecutive address fields of /proc/self/stat, counted from 1 as in proc(5)."""
    fields = stat[stat.rindex(b")") + 2:].split()
    start = int(fields[first_field - 3])  # the list starts at field 3 (state)
    return start, int(fields[first_field - 2])


def _blank_values(block: bytes) -> bytes:
    entries = block.split(b"\0")
    for i, entry in enumerate(entries):
        name, sep, value = entry.partition(b"=")
        readable = name.decode(errors="replace")
        if sep and readable not in NOT_SECRET and SECRET_NAME.search(readable):
            entries[i] = name + sep + b"*" * len(value)
    return b"\0".join(entries)


def _blank_options(block: bytes) -> bytes:
    args = block.split(b"\0")
    for i, arg in enumerate(args):
        for option in SECRET_OPTIONS:
            if arg == option and i + 1 < len(args):
                args[i + 1] = b"*" * len(args[i + 1])
            elif arg.startswith(option + b"="):
                args[i] = option + b"=" + b"*" * (len(arg) - len(option) - 1)
    return b"\0".join(args)


def scrub_own_secrets() -> bool:
    """Overwrite secret values in this process's exec-time environment and command line."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        regions = [(_bounds(stat, 48), _blank_options), (_bounds(stat, 50), _blank_values)]
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            for (start, end), blank in regions:
                mem.seek(start)
                block = mem.read(end - start)
                new = blank(block)
                if new != block and len(new) == len(block):
                    mem.seek(start)
                    mem.write(new)
    except (OSError, ValueError, IndexError):
        return False
    return True
