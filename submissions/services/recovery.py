"""Runs never stay lost: the sweep hands a run whose job vanished or whose agent fell silent back to
the queue, once, whoever sweeps and however many sweep at the same time.

Signs of life:
- a running run: its agent's heartbeats (every 10 s) name the attempt it judges (`note_judging`);
  a run not named for RUN_SILENT_AFTER_SECONDS is lost, whether the agent's host is gone or its
  worker was killed and came back (the new process names no run). Nothing here asks Redis, so a
  Redis restart, with its data kept or lost, costs no judgement in progress. A worker restarted
  under its name reports its predecessor's runs at once (`requeue_abandoned`).
- a queued run: its job in its queue's list, or in the claim list of the host that took it (only the
  site pushes to queues; a host may only move ids from a queue's head into its own claim list, and
  `start` takes them out), read in one round trip per queue and one for every host's claim list;
  checked once RUN_REQUEUE_AFTER_SECONDS passed. Whatever else hosts write in Redis (registries,
  worker records) is never read here, so no host can make a sweep slow or a run look alive.
- a job taken and never started: it stays in the host's claim list. Once it has been there for
  RUN_CLAIM_TIMEOUT_SECONDS (first seen by a sweep) while its run is still queued at that attempt, the
  run goes back to the front of its queue (not counted as a spent attempt) and the host is charged
  with a dropped job; after AGENT_DROPPED_JOBS_BEFORE_QUARANTINE of them its Redis user is switched
  off and its workers drained (fleet.quarantine_agent) until an organizer resumes one.
- agents' Redis users: a Redis restart that lost them (no ACL file) would lock every host out; each
  sweep makes the missing ones again from the site's record (agent_redis.restore_missing).

Each decision is made on a snapshot, then taken again under the run's row lock against the same
attempt and job id: two sweeps that saw the same lost run requeue it once.
"""
import logging
from dataclasses import dataclass
from datetime import timedelta

import redis
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from submissions import queueing
from submissions.models import Agent, Run, RunStatus
from submissions.services import confirming, final_system_tests, run_states

log = logging.getLogger(__name__)

MAX_NAMED_RUNS = 16  # what one heartbeat may vouch for (a worker judges one run at a time)


@dataclass(frozen=True)
class Lost:
    pk: int
    status: str
    attempts: int
    rq_job_id: str
    reason: str


def note_judging(agent, judging_now, now=None):
    """The runs an agent's heartbeat says it is judging, as (run id, attempt) pairs; None from an
    agent too old to say, whose heartbeat then vouches for every run it started. Only the runs this
    agent started, at that attempt, count. Returns how many runs were marked alive."""
    now = now or timezone.now()
    running = Run.objects.filter(agent=agent, status=RunStatus.RUNNING)
    if judging_now is None:
        return running.update(alive_at=now)
    named = Q(pk__in=[])
    for run_id, attempt in judging_now[:MAX_NAMED_RUNS]:
        named |= Q(pk=run_id, attempts=attempt)
    return running.filter(named).update(alive_at=now)


def _silent_since(now):
    return now - timedelta(seconds=settings.RUN_SILENT_AFTER_SECONDS)


def _running_is_lost(run, now):
    """Why this running run is lost, or None: past the deadline, or not named by its agent lately."""
    if run.started_at and run.started_at < now - timedelta(seconds=settings.RUN_DEADLINE_SECONDS):
        return "its judgement ran past the deadline"
    last_sign = run.alive_at or run.started_at
    if last_sign is None or last_sign < _silent_since(now):
        return f"its agent did not name it in a heartbeat for {settings.RUN_SILENT_AFTER_SECONDS} s"
    return None


def _lost_running(now):
    silent = _silent_since(now)
    deadline = now - timedelta(seconds=settings.RUN_DEADLINE_SECONDS)
    rows = Run.objects.filter(status=RunStatus.RUNNING).filter(
        Q(started_at__lt=deadline) | Q(alive_at__lt=silent) | Q(alive_at__isnull=True, started_at__lt=silent)
        | Q(started_at__isnull=True)).order_by("pk")
    for run in rows.only("pk", "status", "attempts", "rq_job_id", "started_at", "alive_at"):
        reason = _running_is_lost(run, now)
        if reason:
            yield Lost(run.pk, run.status, run.attempts, run.rq_job_id, reason)


def _queued_grace(now):
    return now - timedelta(seconds=settings.RUN_REQUEUE_AFTER_SECONDS)


def _claim_lists():
    """{claim list: agent} of every agent whose host may hold jobs."""
    from submissions.services import agent_redis

    lists = {}
    for agent in Agent.objects.filter(is_active=True).only("pk", "name", "dropped_jobs", "quarantine_reason"):
        key = agent_redis.claim_list(agent.name)
        if key is not None:
            lists[key] = agent
    return lists


def _lost_queued(now, claimed):
    """Queued runs past the grace whose job is nowhere in Redis: one Redis round trip per queue."""
    rows = list(Run.objects.filter(status=RunStatus.QUEUED, enqueued_at__lt=_queued_grace(now))
                .select_related("gpu_type").order_by("pk").only("pk", "attempts", "rq_job_id", "rejudge_id", "confirms_id",
                                                                 "final_test", "gpu_type__slug"))
    waiting = {name: queueing.waiting_job_ids(name) for name in {run.queue_name for run in rows}}
    for run in rows:  # each run on its own queue: a rejudge's on the rejudge queue, a final test's on its own
        if not run.rq_job_id.startswith(queueing.job_id_prefix(run.gpu_type.slug)):
            # queued by a site from before job ids named their GPU type: no host's Redis user may read
            # that job, so it goes out again under a new id (and the old one is taken off the queue)
            yield Lost(run.pk, RunStatus.QUEUED, run.attempts, run.rq_job_id, OUTDATED_JOB_ID)
        elif run.rq_job_id not in waiting[run.queue_name] and run.rq_job_id not in claimed:
            yield Lost(run.pk, RunStatus.QUEUED, run.attempts, run.rq_job_id, "its queued job was lost")


def claims_seen_key():
    return f"gpucf:claims-seen:{settings.GPU_QUEUE_PREFIX}"


def _claim_ages(claimed, now):
    """{job id: seconds since a sweep first saw it in a claim list}, kept on the site's Redis."""
    site = queueing.site_connection()
    seen = {k.decode(): float(v) for k, v in site.hgetall(claims_seen_key()).items()}
    new = {job_id: now.timestamp() for job_id in claimed if job_id not in seen}
    gone = [job_id for job_id in seen if job_id not in claimed]
    with site.pipeline() as pipe:
        if new:
            pipe.hset(claims_seen_key(), mapping=new)
        if gone:
            pipe.hdel(claims_seen_key(), *gone)
        pipe.execute()
    first_seen = {**seen, **new}
    return {job_id: now.timestamp() - first_seen[job_id] for job_id in claimed}


def _settle_claims(claimed, lists, now):
    """Claims of runs no longer queued at that attempt are cleared; claims left unstarted for
    RUN_CLAIM_TIMEOUT_SECONDS are handed back and charged to their host. Returns runs handed back."""
    ages = _claim_ages(claimed, now)
    runs = {run.rq_job_id: run for run in Run.objects.filter(rq_job_id__in=list(claimed), status=RunStatus.QUEUED)
            .only("pk", "rq_job_id")}
    touched = 0
    for job_id, key in claimed.items():
        if job_id not in runs:  # started, finished or handed back meanwhile: the id is litter
            queueing.release_claim(key, job_id)
        elif ages[job_id] >= settings.RUN_CLAIM_TIMEOUT_SECONDS:
            touched += _hand_back_dropped(runs[job_id].pk, job_id, key, lists[key])
    return touched


def _hand_back_dropped(run_id, job_id, claim_key, agent):
    from submissions.services import fleet

    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("gpu_type").filter(
            pk=run_id, rq_job_id=job_id, status=RunStatus.QUEUED).first()
        if run is None:
            return 0
        reason = (f"agent {agent.name}'s host took its job {settings.RUN_CLAIM_TIMEOUT_SECONDS} s ago or more "
                  "and never started it")
        # the host's doing, not the run's: no attempt is spent
        run_states.hand_back_unspent(run, actor_label="sweeper", reason=reason, action="run.claim_dropped",
                                  before={"attempt": run.attempts, "agent": agent.name})
        Agent.objects.filter(pk=agent.pk).update(dropped_jobs=F("dropped_jobs") + 1)
        dropped = Agent.objects.get(pk=agent.pk).dropped_jobs
        if dropped >= settings.AGENT_DROPPED_JOBS_BEFORE_QUARANTINE:
            fleet.quarantine_agent(agent, f"its host took {dropped} jobs from its queues and never started them")
    queueing.release_claim(claim_key, job_id)
    return 1


def _sweep_claims(now):
    """Every host's claim list, read once: {job id: claim list}, and the runs handed back."""
    lists = _claim_lists()
    found = queueing.claimed_job_ids(lists)
    claimed = {job_id: key for key, ids in found.items() for job_id in ids}
    return claimed, _settle_claims(claimed, lists, now)


def _still_lost(run, lost, now):
    if (run.status, run.attempts, run.rq_job_id) != (lost.status, lost.attempts, lost.rq_job_id):
        return False  # started, finished or requeued since the snapshot: someone else acted
    if run.status == RunStatus.QUEUED:
        return run.enqueued_at is not None and run.enqueued_at < _queued_grace(now)
    return _running_is_lost(run, now) is not None


OUTDATED_JOB_ID = "its job was queued under an id that names no GPU type (an older site)"


def _requeue(lost, now):
    """Take the decision again under the row lock; True when this sweep requeued (or closed) the run."""
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("gpu_type").filter(pk=lost.pk).first()
        if run is None or not _still_lost(run, lost, now):
            return False
        if lost.reason == OUTDATED_JOB_ID:  # the platform's doing: no attempt spent
            queue_name, old_id = run.queue_name, run.rq_job_id
            transaction.on_commit(lambda: queueing.remove_job(queue_name, old_id), robust=True)
            run_states.hand_back_unspent(run, actor_label="sweeper", reason=lost.reason,
                                      before={"attempt": run.attempts, "job": old_id})
            return True
        run_states.requeue(run, lost.reason)
        return True


def requeue_abandoned(agent, abandoned):
    """(run id, attempt) pairs that a restarted worker of this agent found its killed predecessor
    judging: judged again now, instead of after RUN_SILENT_AFTER_SECONDS. Only runs this agent is
    judging at that attempt: an agent can give up its own runs, nobody else's."""
    touched = 0
    for run_id, attempt in abandoned[:MAX_NAMED_RUNS]:
        with transaction.atomic():
            run = (Run.objects.select_for_update().select_related("gpu_type")
                   .filter(pk=run_id, attempts=attempt, agent=agent, status=RunStatus.RUNNING).first())
            if run is not None:
                run_states.requeue(run, "its agent's worker was restarted and found the judgement abandoned",
                           actor_label=f"agent:{agent.name}")
                touched += 1
    return touched


def sweep_runs(now=None):
    """Requeue (or, attempts spent, close) every lost run, then release the waiting runs that have a
    free slot (scheduling); returns how many this sweep touched."""
    now = now or timezone.now()
    touched = sum(_requeue(lost, now) for lost in list(_lost_running(now)))
    try:
        _restore_agents_redis_users()
        claimed, handed_back = _sweep_claims(now)
        queued = list(_lost_queued(now, claimed))
        touched += handed_back
    except redis.RedisError as exc:  # Redis down: nothing to compare with; the next sweep will
        log.warning("sweep: the queues could not be read (%s); queued runs not checked", exc)
        queued = []
    touched += sum(_requeue(lost, now) for lost in queued)
    final_system_tests.settle_unfinished()  # one whose last run's after-commit settling failed
    return touched + run_states.release_waiting_runs() + confirming.release_waiting()


def _restore_agents_redis_users():
    from submissions.services import agent_redis

    try:
        agent_redis.restore_missing()
    except redis.ResponseError as exc:  # a Redis without ACL users, or the site's user may not ACL
        log.debug("sweep: agents' Redis users not checked (%s)", exc)


def sweep_key():
    return f"gpucf:sweep-due:{settings.GPU_QUEUE_PREFIX}"


def sweep_if_due():
    """Sweep unless someone did less than SWEEP_INTERVAL_SECONDS ago (a key set-if-absent on the
    site's Redis with that expiry): an agent's heartbeat costs one Redis command, whatever the
    backlog, except once per interval site-wide. Returns the sweep's count, or None when not due."""
    try:
        due = queueing.site_connection().set(sweep_key(), timezone.now().isoformat(), nx=True,
                                             ex=settings.SWEEP_INTERVAL_SECONDS)
    except redis.RedisError as exc:
        log.warning("sweep: the site's Redis did not answer (%s); `manage.py sweep_runs --loop` sweeps", exc)
        return None
    return sweep_runs() if due else None
