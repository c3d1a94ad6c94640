"""A memory limit without a cgroup: a watchdog thread in the parent samples the resident memory of
the judged process tree and kills the tree when it is over the limit of the phase it is in.

The tree: the judged process, its descendants (by parent pid), the members of its session, and the
agent's own children that were not there before the run (the agent is a child subreaper, so an
orphan that called setsid() and double-forked comes back to it: profiler_agent.sandbox.process_sweep).

Resident memory of a process: RssAnon + RssShmem from /proc/PID/status (private memory and shared
memory it touched). File-backed pages (RssFile) are left out: they are the page cache of the
libraries it mapped (a CUDA build of torch maps GiBs of them), shared by every process of the tree
and droppable by the kernel, which would charge the same library once per process. GPU memory is
not resident memory: device memory is left to the device's own limits.

Sampling every SAMPLE_INTERVAL_S: touching fresh pages runs at a few GB/s per thread at best (the
kernel zeroes each page on its first touch; ~2-3 GB/s measured on this host), so a tree overshoots by
at most a few hundred MB per interval before it is caught, and a GiB-sized allocation, which takes
hundreds of milliseconds to touch, is caught while it is being made. One sample reads /proc/*/stat
once (a few ms) and the status files of the tree's processes only.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass

from profiler_agent.sandbox.process_sweep import process_stat

SAMPLE_INTERVAL_S = 0.05


def tree_pids(root: int, spared: set[int]) -> set[int]:
    """Live processes of the run rooted at `root` (which leads its own session)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = process_stat(int(entry))
        if stat is None or stat[2] == "Z":
            continue
        pid, (ppid, sid, _) = int(entry), stat
        parents[pid] = ppid
        if pid == root or sid == root or (ppid == me and pid not in spared):
            found.add(pid)
    grew = True
    while grew:  # descendants that left the session, however deep
        grew = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found and pid != me:
                found.add(pid)
                grew = True
    return found


def resident_bytes(pid: int) -> int:
    """RssAnon + RssShmem of `pid`, 0 when it is gone."""
    total = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"RssAnon:", b"RssShmem:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return total


def tree_resident_bytes(root: int, spared: set[int]) -> tuple[int, set[int]]:
    pids = tree_pids(root, spared)
    return sum(resident_bytes(p) for p in pids), pids


@dataclass(frozen=True)
class MemoryExceeded:
    limit_bytes: int
    resident_bytes: int
    phase: str  # where it was, in words: "while importing the candidate (build phase)"


class MemoryWatchdog:
    """Samples the tree until stopped. `limit_and_phase()` (called each sample) gives the limit in
    force (None: unlimited now) and the phase in words; over the limit, the tree is killed and
    `exceeded` says by how much."""

    def __init__(self, root: int, spared, limit_and_phase, interval_s: float = SAMPLE_INTERVAL_S):
        # spared: a set, or a callable giving the set now (the agent's other runs come and go)
        self.root, self.limit_and_phase, self.interval_s = root, limit_and_phase, interval_s
        self.spared = spared if callable(spared) else (lambda fixed=frozenset(spared): fixed)
        self.exceeded: MemoryExceeded | None = None
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="memory-watchdog", daemon=True)

    def start(self) -> MemoryWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            limit, phase = self.limit_and_phase()
            resident, pids = tree_resident_bytes(self.root, set(self.spared()))
            self.peak_bytes = max(self.peak_bytes, resident)
            if limit and resident > limit:
                self.exceeded = MemoryExceeded(limit, resident, phase)
                _kill(pids | {self.root})
                return
            self._stop.wait(self.interval_s)


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
