"""The limits of a judged process: what they are (Limits), the figures the agent works out for one
run, and applying them in the child, between fork and exec or in a fork of the zygote
(profiler_agent.sandbox.zygote_server): one function for both paths."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from profiler_agent.sandbox import cgroup, privileges, process_sweep


@dataclass(frozen=True)
class Limits:
    """Limits of a judged process. RLIMIT_NPROC counts per uid (threads included) and root is
    exempt, so extra_processes is added on top of what the uid already runs; in a cgroup with the pids
    controller it is also pids.max, which counts the run's own tasks and binds root too. The memory
    limits are a cgroup's memory.max where one can be made, else the parent's watchdog over the tree's
    resident memory (profiler_agent.sandbox.memory_watchdog); either way the compile limit applies while
    building and the run limit after."""

    extra_processes: int = 4096
    file_size_bytes: int = 16 * 1024**3
    cpu_s: int | None = None  # None: wall-clock limits x CPU count (a compile is parallel)
    memory_bytes: int | None = None  # with a compile limit, once it reports "compiled" (None: unlimited)
    compile_memory_bytes: int | None = None  # until then, and during later builds (None: unlimited)
    # added to the child's niceness: a process that starts beside a judging's timing (the profiler
    # started ahead) yields the CPU to it, whose host-bound calls slowed up to 8x beside its imports
    niceness: int = 0


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


def limit_figures(limits: Limits, wall_s: float, user: privileges.SandboxUser | None,
                  cgroup_procs: str | None) -> dict:
    """What apply_limits applies in the child, worked out in the agent (JSON: the zygote gets it too)."""
    nproc = _uid_tasks(user.uid if user else os.getuid()) + limits.extra_processes
    cpu = limits.cpu_s or int(wall_s * (os.cpu_count() or 1)) + 10
    return {"cgroup_procs": cgroup_procs, "user": [user.uid, user.gid] if user else None, "niceness": limits.niceness,
            "rlimits": {"RLIMIT_NPROC": nproc, "RLIMIT_FSIZE": limits.file_size_bytes, "RLIMIT_CPU": cpu,
                        "RLIMIT_CORE": 0}}


def apply_limits(figures: dict, parent: int) -> None:
    """In the child, before the command runs (between fork and exec, or in a fork of the zygote)."""
    if figures["cgroup_procs"] is not None:
        cgroup.join(figures["cgroup_procs"])  # first, while still privileged enough to write there
    # what the harness writes there (outputs, builds) readable by the trusted processes' uid
    # (privileges.trusted_user), whatever umask the agent was started with
    os.umask(0o022)
    if figures["niceness"]:
        os.nice(figures["niceness"])
    if figures["user"]:
        privileges.drop_to(privileges.SandboxUser(*figures["user"]))
    if not process_sweep.die_with_parent(parent):  # a killed agent leaves no judged process behind
        os._exit(70)
    for name, value in figures["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
