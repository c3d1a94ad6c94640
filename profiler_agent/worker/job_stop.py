"""Orders to stop a judging: the site's heartbeat answer names, in `stop_judging`, the attempts it no
longer wants judged (an organizer cancelled the run); the heartbeat thread of the worker writes the
order here, and the judge in the work-horse, watching its sandboxed run's deadline, reads it and ends
the run (sandbox.judging_stop). The horse then reports nothing and goes on to the next job.

Like the job gate (worker.job_gate), it lives in an anonymous shared memory page made before any fork,
so the worker's write is seen by the horse RQ forks for each job, without locks; a page of its own,
since the gate says whether to take jobs and this which judging to end. It holds the latest order
alone: a worker judges one attempt at a time."""

from __future__ import annotations

import mmap
import struct

from profiler_agent.protocol.vocabulary import STOP_JUDGING

_LAYOUT = struct.Struct("=qq")  # run id, attempt (0, 0: no order)


class StopOrders:
    def __init__(self):
        self._page = mmap.mmap(-1, mmap.PAGESIZE)  # MAP_SHARED | MAP_ANONYMOUS: shared across fork

    def order(self, run_id: int, attempt: int) -> None:
        _LAYOUT.pack_into(self._page, 0, run_id, attempt)

    def ordered(self, run_id: int, attempt: int) -> bool:
        """Whether the judging of this attempt must stop."""
        return _LAYOUT.unpack_from(self._page, 0) == (run_id, attempt)


_installed: list[StopOrders] = []


def install(orders: StopOrders) -> None:
    _installed[:] = [orders]


def current() -> StopOrders:
    """The worker's orders; fresh empty ones where none were installed (a plain `rq worker`)."""
    if not _installed:
        _installed.append(StopOrders())
    return _installed[0]


def orders_in(answer: dict) -> list[tuple[int, int]]:
    """The (run id, attempt) pairs a heartbeat answer orders stopped; malformed items are skipped."""
    items = answer.get(STOP_JUDGING)
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            run_id, attempt = item.get("run_id"), item.get("attempt")
            if type(run_id) is int and type(attempt) is int and run_id > 0 and attempt > 0:
                found.append((run_id, attempt))
    return found
