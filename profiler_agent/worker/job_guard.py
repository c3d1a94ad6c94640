"""What an agent's RQ worker agrees to run: the judge function with JSON `{run_id, attempt}`, nothing else.

Every agent host can write to the `gpu.*` queues, so a job there is untrusted input. RQ would
unpickle it, import any function it names and call it, and import and call any callback or
webhook it carries, both for the job it runs and for jobs its maintenance finds in the registries.
Here every such door is shut:
- payloads are decoded as JSON only (a pickle fails to decode; pickle is never reached), the job's
  `meta` and results too;
- `JudgeWorker.execute_job` refuses, before the work-horse forks, a job that names another function,
  has an instance, positional arguments, other keyword arguments than `run_id`/`attempt` (positive
  ints), callbacks, webhooks, dependencies or repeats: it is marked failed with the reason and the
  worker carries on;
- `GuardedJob` never resolves a callback, never sends a webhook, and resolves `func` only for an
  accepted job, whatever RQ path asks (registry clean-ups included); a job hash that does not even
  parse is kept (and refused) instead of stopping the worker;
- the worker never enqueues dependents and listens to no pub/sub commands (its Redis user needs
  no channel).

It also takes no job while its gate (worker.job_gate) is closed: the site drained this worker, or
refused it a run and asked it to pause; nor before the site named the host's claim list (worker.job_claims:
a job is taken by moving its id into that list, the only move the host's Redis user may make on a
queue). A blocking dequeue waits DEQUEUE_SLICE_S at most, so a gate closed meanwhile holds from the
next job on.

It touches no key shared by every host: no global worker sets (`rq:workers`, `rq:workers:<queue>`),
no `rq:suspended` (the site drains workers instead), no intermediate queue.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import redis

from rq import Queue, Worker
from rq.exceptions import DeserializationError, NoSuchJobError
from rq.job import Job, JobStatus
from rq.defaults import DEFAULT_WORKER_TTL
from rq.worker import WorkerStatus
from rq.serializers import JSONSerializer
from rq.utils import current_timestamp, now, utcformat

from profiler_agent.protocol.vocabulary import FINAL_QUEUE_SUFFIX, JOB_FUNCTION
from profiler_agent.worker.queue_order import listen_order
from profiler_agent.worker import job_claims
from profiler_agent.worker import job_gate
from profiler_agent.worker.liveness import LivenessMixin

log = logging.getLogger(__name__)

DEQUEUE_SLICE_S = 5  # longest blocking dequeue: how late a closed gate can be noticed
GATE_POLL_S = 0.5  # how often a closed gate is looked at again
RQ_HEARTBEAT_S = 15.0  # refresh the worker's record in Redis this often while the gate is closed

JUDGE_FUNCTION = JOB_FUNCTION  # the wire name (protocol.vocabulary), whatever module judges
JUDGE_KWARGS = ("attempt", "run_id")
REFUSED_TTL_S = 7 * 24 * 3600  # a refused job stays in the failed registry this long, for the operator


class RefusedJob(RuntimeError):
    """A job this agent does not run."""


def _positive_int(value: Any) -> bool:
    return type(value) is int and value > 0  # bool is an int subclass: refused by `type(...) is int`


def refusal_reason(job: Job) -> str | None:
    """Why this job must not run here, or None when it is a well-formed judge job."""
    unreadable = getattr(job, "unreadable", None)
    if unreadable:
        return f"its hash could not be read ({unreadable})"
    try:
        func_name, instance, args, kwargs = job.func_name, job.instance, job.args, job.kwargs
    except DeserializationError:
        return "its payload is not JSON (a pickled job?); it was not decoded"
    if func_name != JUDGE_FUNCTION:
        return f"it names the function {str(func_name)[:200]!r}; only {JUDGE_FUNCTION} runs here"
    if instance is not None:
        return "it carries an instance"
    if args:
        return "it has positional arguments"
    if not isinstance(kwargs, dict) or sorted(kwargs) != list(JUDGE_KWARGS):
        names = sorted(map(str, kwargs)) if isinstance(kwargs, dict) else type(kwargs).__name__
        return f"its keyword arguments are {names}, not exactly run_id and attempt"
    if not all(_positive_int(kwargs[key]) for key in JUDGE_KWARGS):
        return "run_id and attempt must be positive integers"
    callbacks = [n for n in (job._success_callback_name, job._failure_callback_name, job._stopped_callback_name) if n]
    if callbacks:
        return f"it names callbacks {[str(n)[:200] for n in callbacks]}"
    if getattr(job, "webhooks", None):
        return "it carries webhooks"
    if job._dependency_ids:
        return "it has dependencies"
    if job.repeats_left:
        return "it asks to be repeated"
    return None


def judge_kwargs(connection, job_id: str) -> dict | None:
    """{"run_id", "attempt"} of a well-formed judge job in Redis, else None."""
    try:
        job = GuardedJob.fetch(job_id, connection=connection, serializer=JSONSerializer)
    except NoSuchJobError:
        return None
    return None if refusal_reason(job) else {key: job.kwargs[key] for key in JUDGE_KWARGS}


class GuardedJob(Job):
    """A job that can only ever call the judge function, and never a callback or a webhook."""

    unreadable: str | None = None

    def restore(self, raw_data) -> None:
        try:
            super().restore(raw_data)
        except NoSuchJobError:
            raise
        except Exception as exc:  # a malformed hash must not stop the worker: keep it, refuse it
            self.unreadable = f"{type(exc).__name__}: {str(exc)[:200]}"

    @property
    def func(self):
        reason = refusal_reason(self)
        if reason is not None:
            raise RefusedJob(f"job {self.id} refused: {reason}")
        from profiler_agent.worker.judge_job import judge_run

        return judge_run

    # RQ would import these names and call them: an agent runs no callbacks at all.
    @property
    def success_callback(self):
        return None

    @property
    def failure_callback(self):
        return None

    @property
    def stopped_callback(self):
        return None

    def send_webhooks(self, status, *, exc_string=None) -> None:
        return None


class JudgeWorker(LivenessMixin, Worker):
    """An RQ worker that runs judge jobs only (see the module's docstring). It forces its job class,
    queue class and serializer, so `rq worker -w profiler_agent.worker.job_guard.JudgeWorker` is as
    safe as `python -m profiler_agent work`; both read the rejudge queues after the fresh ones. What
    keeps it recoverable: worker.liveness."""

    job_class = GuardedJob
    queue_class = job_claims.ClaimingQueue
    max_connection_wait_time = 5.0  # Redis back after a restart: take jobs again within seconds

    @property
    def current_run_id(self) -> int | None:
        """The run being judged (LivenessMixin.judging), for the fleet's heartbeat report."""
        return (self.judging or {}).get("run_id")

    def __init__(self, queues, *args, gate: job_gate.JobGate | None = None, in_process: bool = False, **kwargs):
        self.gate = gate or job_gate.current()
        self.in_process = in_process  # no work-horse: the job runs here, as in RQ's SimpleWorker
        # Queue objects built elsewhere (rq's CLI) carry their own job class and serializer, which the
        # registry clean-ups would use: rebuild them from their names with ours.
        listed = list(queues) if isinstance(queues, (list, tuple)) else [queues]
        if kwargs.get("connection") is None:
            kwargs["connection"] = next((q.connection for q in listed if isinstance(q, Queue)), None)
        # Each fresh queue, then its rejudge queue (queues.listen_order), whichever way it is started.
        names = listen_order([q.name if isinstance(q, Queue) else q for q in listed])
        kwargs.update(job_class=GuardedJob, queue_class=job_claims.ClaimingQueue, serializer=JSONSerializer)
        super().__init__(names, *args, **kwargs)
        # Imported once here, so every work-horse forked for a job starts with the judge's modules
        # (bench/dispatch.py: about 0.1 s of each job's start on a 2-core host).
        import profiler_agent.worker.judge_job  # noqa: F401

    def execute_job(self, job: Job, queue: Queue):
        reason = refusal_reason(job)
        if reason is not None:
            self.refuse(job, queue, reason)
            return
        if self.in_process:
            self.judge_with_name(job, lambda: self._execute_here(job, queue))
        else:
            self.judge_with_name(job, lambda: super(JudgeWorker, self).execute_job(job, queue))

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """In process no one refreshes the job's heartbeat while it runs: it lasts the job's whole
        time limit (as in RQ's SimpleWorker)."""
        if not self.in_process:
            return super().get_heartbeat_ttl(job, working_time)
        return int(job.timeout) + 60 if job.timeout and job.timeout > 0 else DEFAULT_WORKER_TTL

    def _execute_here(self, job: Job, queue: Queue) -> None:
        """RQ's SimpleWorker.execute_job: the job runs in this process (the processes a judging
        started for the next one wait here: judge.warm_pool), its time limit by SIGALRM."""
        execution = self.prepare_execution(job)
        self.perform_job(job, queue, execution)
        self.set_state(WorkerStatus.IDLE)

    def dequeue_job_and_maintain_ttl(self, timeout, max_idle_time=None):
        """RQ's dequeue, taken in slices of DEQUEUE_SLICE_S, and not at all while the gate is closed.
        Burst mode (timeout None) stops at a closed gate."""
        started = time.monotonic()
        while max_idle_time is None or time.monotonic() - started < max_idle_time:
            if not self._taking_jobs():
                if timeout is None:
                    log.info("Worker %s: taking no jobs (%s); burst over", self.name, self._why_not_taking())
                    return None
                self._wait_at_closed_gate()
                continue
            if timeout is None:
                return super().dequeue_job_and_maintain_ttl(None, max_idle_time)
            result = super().dequeue_job_and_maintain_ttl(min(timeout, DEQUEUE_SLICE_S), DEQUEUE_SLICE_S)
            if result is not None:
                return result
        return None

    def _taking_jobs(self) -> bool:
        return self.gate.accepting() and job_claims.claim_list() is not None

    def _why_not_taking(self) -> str:
        return self.gate.why() if not self.gate.accepting() else "the site has not named this host's claim list yet"

    def _wait_at_closed_gate(self) -> None:
        """Until the gate opens: idle, visible as such, the worker's Redis record kept alive."""
        log.info("Worker %s: taking no jobs: %s", self.name, self._why_not_taking())
        self.procline(f"Taking no jobs: {self._why_not_taking()}")
        beat_at = 0.0
        while not self._taking_jobs():
            if time.monotonic() - beat_at >= RQ_HEARTBEAT_S:
                try:
                    self.heartbeat()
                except redis.ConnectionError as exc:  # Redis away (or this host's user not there yet)
                    log.warning("Worker %s: Redis unreachable (%s); retrying", self.name, exc)
                beat_at = time.monotonic()
            time.sleep(GATE_POLL_S)  # a stop signal raises StopRequested here (the worker is idle)
        log.info("Worker %s: taking jobs again", self.name)

    def refuse(self, job: Job, queue: Queue, reason: str) -> None:
        """Mark the job failed with the reason, touching nothing it names (no save of its fields)."""
        log.error("Worker %s: REFUSED job %s from %s: %s", self.name, job.id, queue.name, reason)
        message = f"refused by the profiler agent {self.name}: {reason}"
        with self.connection.pipeline() as pipe:
            pipe.hset(job.key, mapping={"status": JobStatus.FAILED.value, "exc_info": message,
                                        "ended_at": utcformat(now())})
            pipe.expire(job.key, REFUSED_TTL_S)
            pipe.zadd(queue.failed_job_registry.key, {job.id: current_timestamp() + REFUSED_TTL_S})
            pipe.lrem(queue.intermediate_queue_key, 1, job.id)
            pipe.execute()

    def clean_registries(self) -> None:
        """RQ's clean-up of this worker's queues, without the global rate-limit registries (their
        names are anyone's to write and their clean-up runs Lua scripts, which agents may not)."""
        for queue in self.queues:
            if job_claims.passed_over(queue.key):
                continue  # a final queue this host is not granted: nor are its registries
            try:
                if not queue.acquire_maintenance_lock():
                    continue
            except redis.exceptions.NoPermissionError:
                if not queue.key.endswith(FINAL_QUEUE_SUFFIX):
                    raise
                job_claims.refused(queue.key)  # a site from before the final queues grants none of its keys
                continue
            try:
                queue.finished_job_registry.cleanup()
                queue.started_job_registry.cleanup(exception_handlers=self._exc_handlers)
                for registry in (queue.failed_job_registry, queue.deferred_job_registry):
                    registry.cleanup()
            except Exception:  # whatever another host wrote there must not stop this worker
                log.exception("Worker %s: cleaning the registries of %s failed", self.name, queue.name)
            finally:
                queue.release_maintenance_lock()
        self.last_cleaned_at = now()

    def bootstrap(self, *args, **kwargs) -> None:
        """Started as a plain `rq worker -w ...JudgeWorker` (no heartbeat thread of ours): one heartbeat
        to learn the host's claim list from the site, and the gate's state."""
        super().bootstrap(*args, **kwargs)
        if job_claims.claim_list() is None:
            from profiler_agent.worker import agent_config
            from profiler_agent.worker.heartbeat import send_heartbeat
            from profiler_agent.worker.site_client import SiteClient

            config = agent_config.current()
            send_heartbeat(SiteClient(config.token, attempts=1, timeout_s=10.0), config, self.queue_names(), self.gate)

    def check_for_suspension(self, burst: bool) -> None:
        return None  # `rq:suspended` is every host's key: no host may pause the fleet (the site drains)

    def register_birth(self) -> None:
        """RQ's, without the global worker sets (every host could rewrite those)."""
        if self.connection.exists(self.key) and not self.connection.hexists(self.key, "death"):
            raise ValueError(f"There exists an active worker named {self.name!r} already")
        with self.connection.pipeline() as pipe:
            pipe.delete(self.key)
            self.birth_date = self.last_heartbeat = now()
            pipe.hset(self.key, mapping=self.serialize())
            pipe.expire(self.key, self.worker_ttl + 60)
            pipe.execute()

    def register_death(self) -> None:
        with self.connection.pipeline() as pipe:
            pipe.hset(self.key, "death", utcformat(now()))
            pipe.expire(self.key, 60)
            pipe.delete(self.executions_key)
            pipe.execute()

    def clean_group_registries(self) -> None:
        return None  # RQ job groups are not used by the site; their registry is shared by every queue

    def _enqueue_dependents_safely(self, queue, job) -> None:
        return None  # the judge job has no dependents; another job's are not ours to enqueue

    def subscribe(self) -> None:
        return None  # no pub/sub commands (kill-horse, stop-job) from whoever can publish on Redis

    def unsubscribe(self) -> None:
        return None
