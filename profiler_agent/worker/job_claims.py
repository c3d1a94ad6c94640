"""How a worker takes a job: it moves the job's id from the head of a queue into its host's claim list.

The site names that list in its heartbeat answer (`claim_list`: `rq:claimed:<queue prefix><the host's
Redis user>`), and the host's Redis user may move ids from the head of its granted queues into it and
do nothing else to queues or to that list: no push, no removal by value, no plain pop. So the only way
for a job to leave a queue is into the claim list of the host that took it, where the site sees it:
`start` is refused for a run whose job is not in the starting host's claim list (still queued, or
taken by another host), the site removes the id at `start`, and a job left there unstarted is handed
back to the queue and counted against that host (submissions/services/recovery.py).

A worker with several queues moves from the first non-empty one in order; it blocks on the first only
(Redis cannot block on several sources of a move), a slice of BLOCK_SLICE_S at a time, so a job on a
later queue waits at most that long.

A site from before the final system test's queues grants no `.final` queue (worker.queue_order): Redis
refuses the move from it, and the worker passes over that queue for REFUSED_QUEUE_RETRY_S before
asking again (the site's next sweep grants it once the site is upgraded). Any other queue refused is
an error, as before.
"""

from __future__ import annotations

import logging
import time

from redis import Redis
from redis.exceptions import NoPermissionError
from rq.exceptions import DequeueTimeout
from rq.queue import Queue
from rq.utils import as_text

from profiler_agent.protocol.vocabulary import FINAL_QUEUE_SUFFIX

log = logging.getLogger(__name__)

BLOCK_SLICE_S = 1
REFUSED_QUEUE_RETRY_S = 60.0

_refused_at: dict[str, float] = {}  # a final queue's key -> when Redis last refused this host a move from it


def passed_over(queue_key: str) -> bool:
    """A final queue this host's Redis user was refused lately (see the module's docstring)."""
    refused = _refused_at.get(queue_key)
    return refused is not None and time.monotonic() - refused < REFUSED_QUEUE_RETRY_S


def refused(queue_key: str) -> None:
    """Redis refused this host a final queue's keys: passed over for a while (said once)."""
    if queue_key not in _refused_at:
        log.warning("this host may not take jobs from %s (a site without final system test queues?): "
                    "reading the other queues, and asking again every %.0f s", queue_key, REFUSED_QUEUE_RETRY_S)
    _refused_at[queue_key] = time.monotonic()


class NoClaimList(RuntimeError):
    """The site has not named this host's claim list yet (no heartbeat answered)."""


_claim_list: list[str] = []


def set_claim_list(key: str | None) -> None:
    """What the site's heartbeat answer named; ignored when absent or not a claim list's name."""
    if isinstance(key, str) and key.startswith("rq:claimed:") and key != (_claim_list[0] if _claim_list else None):
        _claim_list[:] = [key]
        log.info("jobs taken from the queues go to %s", key)


def claim_list() -> str | None:
    return _claim_list[0] if _claim_list else None


class ClaimingQueue(Queue):
    """RQ's Queue whose dequeue moves job ids into the host's claim list (see the module's docstring)."""

    @classmethod
    def _move(cls, connection: Redis, queue_key: str, claims: str, timeout: int | None):
        try:
            if timeout is None:
                return connection.lmove(queue_key, claims, "LEFT", "RIGHT")
            return connection.blmove(queue_key, claims, timeout, "LEFT", "RIGHT")
        except NoPermissionError:
            if not queue_key.endswith(FINAL_QUEUE_SUFFIX):
                raise
            refused(queue_key)
            return None

    @classmethod
    def dequeue_any(cls, queues, timeout, connection, job_class=None, serializer=None, death_penalty_class=None):
        claims = claim_list()
        if claims is None:
            raise NoClaimList("the site has not named this host's claim list yet")
        listed = [queue.key for queue in queues]
        remaining = timeout
        while True:
            queue_keys = [key for key in listed if not passed_over(key)]
            found = None
            for queue_key in queue_keys:
                job_id = cls._move(connection, queue_key, claims, None)
                if job_id is not None:
                    found = queue_key, job_id
                    break
            if found is None:
                queue_keys = [key for key in queue_keys if not passed_over(key)]  # less one refused just now
                if timeout is None or not queue_keys:
                    return None
                if remaining <= 0:
                    raise DequeueTimeout(timeout, queue_keys)
                wait = remaining if len(queue_keys) == 1 else min(remaining, BLOCK_SLICE_S)
                remaining -= wait
                job_id = cls._move(connection, queue_keys[0], claims, wait)
                if job_id is None:
                    continue
                found = queue_keys[0], job_id
            queue_key, job_id = map(as_text, found)
            try:
                fetched = cls._fetch_dequeued_job(connection, queue_key, job_id, job_class=job_class,
                                                  serializer=serializer, death_penalty_class=death_penalty_class)
            except NoPermissionError:
                # an id outside this host's job keys (queued by an older site, before job ids named
                # their GPU type): the site hands its run back under a new id
                log.warning("job %s taken from %s is not one this host may read; left to the site", job_id, queue_key)
                continue
            if fetched is not None:
                return fetched
            # a job id without its hash: the site sees it in the claim list and hands the run back
            log.warning("job %s taken from %s has no hash; left to the site", job_id, queue_key)
