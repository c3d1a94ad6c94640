"""How much memory the harness's own timing buffers may take: the input sets it rotates through,
the batched copies, the L2 flush buffer. A share of the room left, so they are never what ends a
candidate: the rest stays for the models' outputs and workspace.

The room left: on CUDA, free device memory (plus what torch's allocator holds unused); on the
CPU, the smallest of the address space left under RLIMIT_AS (set by the child after the build),
the run's memory limit less what the process holds now (a cgroup's memory.max), and the host's
available memory.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

# The harness's share of the room left: its buffers plus the models' own outputs and workspace
# during a timed call must fit, and a model may allocate several times its inputs' size.
HARNESS_SHARE = 0.25


@dataclass(frozen=True)
class Budget:
    bytes: int
    room_bytes: int  # what the share was taken of
    source: str  # which bound decided the room, for the logs


def _proc_kib(path: str, key: str) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_rooms(memory_limit: int | None) -> dict[str, int]:
    rooms = {}
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    mapped = _proc_kib("/proc/self/status", "VmSize")
    if soft != resource.RLIM_INFINITY and mapped is not None:
        rooms["RLIMIT_AS less the address space mapped"] = soft - mapped
    resident = _proc_kib("/proc/self/status", "VmRSS")
    if memory_limit and resident is not None:
        rooms["the memory limit less what the process holds"] = memory_limit - resident
    available = _proc_kib("/proc/meminfo", "MemAvailable")
    if available is not None:
        rooms["the host's available memory"] = available
    return rooms


def _cuda_rooms(device) -> dict[str, int]:
    import torch

    free, _total = torch.cuda.mem_get_info(device)
    unused = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return {"free device memory": free + unused}


def harness_budget(device, memory_limit: int | None) -> Budget:
    """The share of the room left that the harness's timing buffers may take (see the module)."""
    rooms = _cuda_rooms(device) if device.type == "cuda" else _cpu_rooms(memory_limit)
    if not rooms:
        return Budget(0, 0, "nothing known about the memory left")
    source, room = min(rooms.items(), key=lambda item: item[1])
    room = max(room, 0)
    return Budget(int(room * HARNESS_SHARE), room, source)


def describe(budget: Budget) -> str:
    from profiler_agent.util.sizes import format_size

    return (f"{format_size(budget.bytes)} ({HARNESS_SHARE:.0%} of {format_size(budget.room_bytes)}: "
            f"{budget.source})")
