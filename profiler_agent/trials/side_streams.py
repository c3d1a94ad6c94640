"""Work a candidate leaves on a side stream it never joins.

A forward that writes its output on another stream and returns without making the caller's stream
wait for it (`torch.cuda.current_stream().wait_stream(side)`) hands back a tensor still being written:
whatever reads it next on the caller's stream may read it unfinished. Whether it did depended on which
stream finished first, so the same bundle passed one judging and was a wrong answer the next. Before
each candidate call of the correctness trials, every other stream the candidate can reach through
torch (each pool stream of every priority, and the default stream when it is not the current one)
is held busy for a while: work queued there starts late, so a copy made on the caller's stream right
after the call reads the output unfinished on every judging. A candidate that joins its side
streams waits for them and passes. Streams a candidate makes itself outside torch
(`cudaStreamCreate` in its own extension) are not held.
"""

import torch

from profiler_agent.checkers.compare_outputs import bitwise_equal

# About 30 ms of a GPU's clock: far longer than launching a kernel and reading its output takes.
HOLD_CYCLES = 50_000_000
PRIORITIES = range(0, -8, -1)  # asked for beyond a device's range, torch gives its nearest priority
PER_POOL = 64  # torch hands out pool streams round robin: twice its pool's size reaches each one

_streams = {}  # device index -> every pool stream of every priority


def pool_streams(device) -> list:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _streams:
        found = {}
        for priority in PRIORITIES:
            for _ in range(PER_POOL):
                stream = torch.cuda.Stream(device=index, priority=priority)
                found.setdefault(stream.cuda_stream, stream)
        _streams[index] = list(found.values())
    return _streams[index]


def hold_other_streams(device) -> None:
    """Queues a wait on every stream but the current one (a no-op off CUDA)."""
    if device.type != "cuda":
        return
    current = torch.cuda.current_stream(device)
    others = [*pool_streams(device), torch.cuda.default_stream(device)]
    for stream in others:
        if stream.cuda_stream != current.cuda_stream:
            with torch.cuda.stream(stream):
                torch.cuda._sleep(HOLD_CYCLES)


UNJOINED = ("its output was still being written after the call returned: work on a stream the caller's "
            "stream never waits for (join it with torch.cuda.current_stream().wait_stream(side) before "
            "returning); whatever reads the output next on the caller's stream may read it unfinished")


def still_written(copied, returned) -> bool:
    """Whether the output `returned` (read now, after the device finished) differs from its copy
    made on the caller's stream right after the call."""
    return not bitwise_equal(copied, returned)
