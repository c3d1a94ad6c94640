"""`python -m profiler_agent work`: an RQ worker on the agent's queues, plus heartbeats.

The worker is a JudgeWorker (job_guard): JSON payloads only, the judge function only.

The worker never initializes CUDA (it asks NVML about devices), so RQ may fork a work-horse per
job; judging itself happens in a spawned child (profiler_agent.graders.judged_process). With --keep-warm the
jobs run in the worker process itself, where the next job's processes wait (judge.warm_pool).
"""

from __future__ import annotations

import ctypes
import logging
import sys
import time

from redis import exceptions as redis_errors

from profiler_agent.worker import agent_config
from profiler_agent.worker.heartbeat import HeartbeatThread, send_heartbeat

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4


def hide_from_same_user() -> None:
    """Make /proc/<pid>/environ and memory of the agent unreadable to judged code running as the
    same user (a non-dumpable process's /proc files belong to root). The command line stays
    readable: pass the token through PROFILER_AGENT_TOKEN rather than --token in production."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        except (OSError, AttributeError):
            log.warning("could not mark the agent non-dumpable")


REDIS_RETRY_MAX_S = 5.0


def rq_worker_name(connection, name: str) -> str:
    """The worker's name in Redis: under the host's Redis user (`<user>:<name>`), the only worker keys
    that user may write (submissions/services/agent_redis.py); as given for the default user."""
    user = connection.connection_pool.connection_kwargs.get("username")
    return f"{user}:{name}" if user and user != "default" else name


def wait_for_redis(connection, sleep=time.sleep, while_waiting=lambda: None) -> None:
    """Until Redis answers this host's credentials. After a Redis restart that lost its users, the site
    makes them again within seconds (its sweep, which heartbeats also start: `while_waiting` sends one);
    meanwhile say why, and retry with a capped back-off."""
    delay = 0.5
    while True:
        try:
            connection.ping()
            return
        except redis_errors.AuthenticationError as exc:
            log.warning("Redis refused this host's credentials (%s): waiting for the site to restore its Redis user; "
                        "retrying in %.0f s", exc, delay)
        except redis_errors.ConnectionError as exc:
            log.warning("Redis unreachable (%s); retrying in %.0f s", exc, delay)
        while_waiting()
        sleep(delay)
        delay = min(delay * 2, REDIS_RETRY_MAX_S)


def run_worker(
    config: agent_config.AgentConfig,
    queues: list[str],
    redis_url: str,
    *,
    burst: bool = False,
    heartbeat_s: float = 10.0,
    judging_heartbeat_s: float | None = None,
) -> bool:
    from redis import Redis

    from profiler_agent.worker import job_gate, job_stop
    from profiler_agent.worker.heartbeat import JUDGING_HEARTBEAT_S
    from profiler_agent.worker.job_guard import JudgeWorker, judge_kwargs
    from profiler_agent.worker.liveness import reclaim_name
    from profiler_agent.worker.queue_order import listen_order
    from profiler_agent.worker.site_client import SiteClient

    hide_from_same_user()
    queues = listen_order(queues)  # what the heartbeats report is what the worker reads
    agent_config.install(config)  # the forked work-horses inherit it
    gate = job_gate.JobGate()
    job_gate.install(gate)  # shared with the work-horses: a refused start closes it
    stops = job_stop.StopOrders()
    job_stop.install(stops)  # shared with the work-horses: the heartbeat orders a cancelled judging stopped
    client = SiteClient(config.token, attempts=1, timeout_s=10.0)
    beat = lambda: send_heartbeat(client, config, queues, gate)  # noqa: E731
    # RQ's Worker talks to Redis as it is made (CLIENT SETNAME): a host started while a Redis restart had
    # lost its user would exit there. Wait on a connection of its own: one pooled for the worker before
    # the worker set its socket timeout keeps redis-py's 5 s, which RQ's blocking dequeue would exceed.
    probe = Redis.from_url(redis_url)
    wait_for_redis(probe, while_waiting=beat)
    probe.close()
    connection = Redis.from_url(redis_url)
    worker = JudgeWorker(queues, connection=connection, name=rq_worker_name(connection, config.name), gate=gate,
                         in_process=config.keep_warm)
    wait_for_redis(worker.connection, while_waiting=beat)
    abandoned = reclaim_name(worker.connection, worker.name, JudgeWorker)  # a killed predecessor's name
    # at start, before any job: names no run, hands back the predecessor's (which then wait at the
    # front of the queue for the next free worker, this one first), and a drained worker stays idle
    handed_back = [kwargs for kwargs in (judge_kwargs(worker.connection, job_id) for job_id in abandoned) if kwargs]
    send_heartbeat(client, config, queues, gate, abandoned=handed_back)
    beats = HeartbeatThread(client, config, queues, heartbeat_s, gate, judging=worker.judging_now, stops=stops,
                            judging_interval_s=judging_heartbeat_s or JUDGING_HEARTBEAT_S)
    beats.start()
    try:
        return worker.work(burst=burst, logging_level="INFO")
    finally:
        beats.stop()
