"""What keeps a crashed agent from holding runs or its own name: the worker side of recovery.

- The heartbeat names the run the worker judges (`judging_now`): the site judges a run again once
  no heartbeat has named it for a while, whatever happened to the host (submissions/services/recovery).
- The work-horse and the judged child die with their parent (PR_SET_PDEATHSIG): killing the worker,
  even with SIGKILL to its process group, leaves no orphan judging on the GPU.
- RQ's registry entry of a job is promised for a short time only (HEARTBEAT_MARGIN_S past each
  monitoring interval, not RQ's 60 s), so a job whose worker died is seen abandoned within ~30 s.
- A Redis restart while judging does not end the worker (`maintain_heartbeats`).
- A worker restarted under its name (systemd) takes that name back at once when the worker that held
  it ran on this host and is gone (`reclaim_name`), instead of being refused until the key expires,
  and its first heartbeat hands that worker's runs back to the site ("abandoned").
"""

from __future__ import annotations

import logging
import os
import socket

import redis
from rq.job import Job
from rq.queue import Queue
from rq.registry import StartedJobRegistry
from rq.utils import now, utcformat

from profiler_agent.sandbox.process_sweep import die_with_parent

log = logging.getLogger(__name__)

MONITORING_INTERVAL_S = 10  # the worker refreshes its job's registry entry this often
HEARTBEAT_MARGIN_S = 20  # ... and promises the next refresh within this much more


class LivenessMixin:
    """For an RQ Worker: names its current judge job, ties its horse to its life, short registry TTLs."""

    judging: dict | None = None

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("job_monitoring_interval", MONITORING_INTERVAL_S)
        super().__init__(*args, **kwargs)

    def judging_now(self) -> list[dict]:
        """[{"run_id", "attempt"}] of the job being executed, [] when idle (read by the heartbeat thread)."""
        current = self.judging
        return [dict(current)] if current else []

    def judge_with_name(self, job: Job, run) -> None:
        """Name the job in heartbeats for as long as `run()` executes it."""
        kwargs = job.kwargs
        self.judging = {"run_id": kwargs["run_id"], "attempt": kwargs["attempt"]}
        try:
            run()
        finally:
            self.judging = None

    def fork_work_horse(self, job: Job, queue: Queue):
        self._forking_pid = os.getpid()
        super().fork_work_horse(job, queue)

    def main_work_horse(self, job: Job, queue: Queue):
        if not die_with_parent(self._forking_pid):
            os._exit(1)  # the worker died before the horse could tie itself to it
        super().main_work_horse(job, queue)

    def maintain_heartbeats(self, job: Job, execution) -> None:
        """A Redis restart while judging must not end the worker (RQ would quit, and the horse with
        it): the judgement goes on and is reported to the site, which needs no Redis for that."""
        try:
            super().maintain_heartbeats(job, execution)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("Redis unreachable while judging %s (%s): judging goes on", job.id, exc)

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        if job.timeout and job.timeout > 0:
            return int(max(1, min(job.timeout - working_time, self.job_monitoring_interval))) + HEARTBEAT_MARGIN_S
        return self.job_monitoring_interval + HEARTBEAT_MARGIN_S


def _pid_runs_an_agent(pid: int) -> bool:
    """Whether `pid` is alive and is a profiler agent (not another program that reused the pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"profiler_agent" in f.read()
    except OSError:
        return False


def reclaim_name(connection, name: str, worker_class) -> list[str]:
    """Register the death of a worker of this name that ran on this host and whose process is gone,
    and mark its jobs abandoned now (their registry entries expire at once, for the site's sweep and
    RQ's clean-up). Returns the ids of those jobs. A live worker of that name, or one on another
    host, is left alone: RQ then refuses the name, as it should."""
    key = worker_class.redis_worker_namespace_prefix + name
    record = {k.decode(): v.decode(errors="replace") for k, v in connection.hgetall(key).items()}
    if not record or "death" in record:
        return []
    pid = int(record.get("pid") or 0)
    if record.get("hostname") != socket.gethostname() or pid <= 0 or pid == os.getpid() or _pid_runs_an_agent(pid):
        return []
    executions_key = f"{key}:executions"
    executions = [member.decode(errors="replace") for member in connection.smembers(executions_key)]
    queues = [q for q in record.get("queues", "").split(",") if q]
    with connection.pipeline() as pipe:
        for queue_name in queues:
            registry_key = StartedJobRegistry(queue_name, connection=connection).key
            for composite in executions:
                pipe.zadd(registry_key, {composite: 0}, xx=True)  # abandoned as of now
        pipe.hset(key, "death", utcformat(now()))
        pipe.expire(key, 60)
        pipe.delete(executions_key)
        pipe.execute()
    log.warning("worker %s (pid %s on this host) is gone: its name is taken back, its %d job(s) abandoned",
                name, pid, len(executions))
    return [composite.rsplit(":", 1)[0] for composite in executions]  # "<job id>:<execution id>"
