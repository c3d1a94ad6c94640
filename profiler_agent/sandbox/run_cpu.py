"""The CPU time a run's processes have used, as the agent reads it from outside: each thread's time on
a CPU in nanoseconds (/proc/<pid>/task/<tid>/schedstat), and the run's cgroup's cpu.stat where it has
one (it keeps the time of processes that have exited, double-forked ones included).

Time on a CPU is what a host's load does not stretch: a process waiting for a core gains none. So
between two samples the work done bounds from below the wall time the same work takes on a quiet
host: no thread runs faster than real time (the busiest thread's time), and no process runs on more
cores than it may use (the total over the cores). `wall_floor_ns` is the larger of the two.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CpuSample:
    threads: dict[tuple[int, int], int]  # (pid, tid) -> nanoseconds on a CPU so far
    cgroup_ns: int | None  # the cgroup's usage so far, None without one
    cores: int  # the cores the sampled processes may run on (the most of any of them)


@dataclass(frozen=True)
class CpuUse:
    total_ns: int
    busiest_thread_ns: int
    cores: int

    def wall_floor_ns(self, less_ns: int = 0) -> float:
        """The least wall time this work takes, with `less_ns` of it (known work of others) taken out
        of each bound: never more than the work could have taken."""
        return max(self.busiest_thread_ns - less_ns, (self.total_ns - less_ns) / self.cores, 0)


def _thread_ns(pid: int, tid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None  # gone, or a kernel without scheduler statistics


def _cores(pid: int) -> int:
    try:
        return len(os.sched_getaffinity(pid))
    except OSError:
        return os.cpu_count() or 1


def cgroup_usage_ns(cgroup_dir: str | None) -> int | None:
    if not cgroup_dir:
        return None
    try:
        for line in (Path(cgroup_dir) / "cpu.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "usage_usec":
                return int(value) * 1000
    except (OSError, ValueError):
        pass
    return None


def sample(pids, cgroup_dir: str | None = None) -> CpuSample:
    threads, cores = {}, 1
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except (OSError, ValueError):
            continue
        cores = max(cores, _cores(pid))
        for tid in tids:
            ns = _thread_ns(pid, tid)
            if ns is not None:
                threads[pid, tid] = ns
    return CpuSample(threads, cgroup_usage_ns(cgroup_dir), cores)


def used_between(start: CpuSample, end: CpuSample) -> CpuUse:
    """The work done from `start` to `end`. A thread born in between counts from zero; one that ended
    in between is lost to the per-thread count (and kept by the cgroup's, where there is one)."""
    per_thread = [ns - start.threads.get(key, 0) for key, ns in end.threads.items()]
    total = sum(per_thread)
    if start.cgroup_ns is not None and end.cgroup_ns is not None:
        total = max(total, end.cgroup_ns - start.cgroup_ns)
    return CpuUse(total, max(per_thread, default=0), max(start.cores, end.cores))
