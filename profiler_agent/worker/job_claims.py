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
"""

from __future__ import annotations

import logging

from redis import Redis
from redis.exceptions import NoPermissionError
from rq.exceptions import DequeueTimeout
from rq.queue import Queue
from rq.utils import as_text

log = logging.getLogger(__name__)

BLOCK_SLICE_S = 1


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
        if timeout is None:
            return connection.lmove(queue_key, claims, "LEFT", "RIGHT")
        return connection.blmove(queue_key, claims, timeout, "LEFT", "RIGHT")

    @classmethod
    def dequeue_any(cls, queues, timeout, connection, job_class=None, serializer=None, death_penalty_class=None):
        claims = claim_list()
        if claims is None:
            raise NoClaimList("the site has not named this host's claim list yet")
        queue_keys = [queue.key for queue in queues]
        remaining = timeout
        while True:
            found = None
            for queue_key in queue_keys:
                job_id = cls._move(connection, queue_key, claims, None)
                if job_id is not None:
                    found = queue_key, job_id
                    break
            if found is None:
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
