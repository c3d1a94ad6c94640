"""The order runs are judged in (docs/architecture.md, "Scheduling").

- Fresh runs go to `gpu.<type>`, a rejudge's runs and second judgings to `gpu.<type>.rejudge`; agents read the fresh
  queue first (RQ takes its queues in order), so a rejudge never delays a contestant's submission.
- One contestant has at most MAX_QUEUED_RUNS_PER_CONTESTANT fresh runs waiting in Redis per GPU type;
  more stay in the database (`waiting`) and are released oldest first when one of the contestant's
  runs on that type leaves the queue (started, finished, cancelled, given up), in the transaction
  that changed it (the job is pushed on commit). A burst therefore takes at most `cap` places ahead of
  another contestant's run, and the sweeper releases whatever a failed release left waiting.

Lock order, to stay free of deadlocks: a run's row, then its contestant's row, then waiting runs.
"""
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q

from submissions import queueing
from submissions.models import Contestant, Run, RunStatus

log = logging.getLogger(__name__)


def cap():
    """Fresh runs per contestant and GPU type allowed in Redis at once; None: no cap."""
    value = settings.MAX_QUEUED_RUNS_PER_CONTESTANT
    return value if value and value > 0 else None


def _fresh_runs(contestant_id, gpu_type_id):
    return Run.objects.filter(submission__contestant_id=contestant_id, gpu_type_id=gpu_type_id, rejudge__isnull=True,
                              confirms__isnull=True)


def admit(run, contestant_id):
    """Hand a new run to its queue, or keep it waiting when its contestant has `cap` runs queued (or
    older ones waiting: they go first). The caller holds the contestant's row lock, or creates a
    rejudge's runs, which are never capped (their queue is behind every fresh run anyway)."""
    from submissions.services import judging

    limit = cap()
    if not run.behind_fresh_runs and limit is not None:
        runs = _fresh_runs(contestant_id, run.gpu_type_id).exclude(pk=run.pk)
        counts = runs.aggregate(queued=Count("pk", filter=Q(status=RunStatus.QUEUED)),
                                waiting=Count("pk", filter=Q(status=RunStatus.WAITING)))
        if counts["waiting"] or counts["queued"] >= limit:
            run.status = RunStatus.WAITING
            run.save(update_fields=["status"])
            return
    judging.enqueue_run(run)


def release(contestant_id, gpu_type_id):
    """Queue the contestant's oldest waiting runs on this GPU type, as many as free slots allow.
    Returns how many were released."""
    from submissions.services import judging

    limit = cap()
    Contestant.objects.select_for_update().filter(pk=contestant_id).first()
    runs = _fresh_runs(contestant_id, gpu_type_id)
    waiting = runs.filter(status=RunStatus.WAITING).order_by("pk")  # oldest first
    if limit is not None:
        free = limit - runs.filter(status=RunStatus.QUEUED).count()
        if free <= 0:
            return 0
        waiting = waiting[:free]
    released = 0
    for run in Run.objects.select_for_update().filter(pk__in=list(waiting.values_list("pk", flat=True))).order_by("pk"):
        if run.status == RunStatus.WAITING:  # re-read under its lock
            judging.enqueue_run(run)
            released += 1
    return released


def after_leaving_queue(run):
    """A fresh run left the queue (started, finished, cancelled): its slot goes to the contestant's
    next waiting run. Never fails the caller's change: a release that fails is the sweeper's to redo."""
    if run.behind_fresh_runs:
        return
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction survives a failure here
            release(run.submission.contestant_id, run.gpu_type_id)
    except Exception:
        log.exception("releasing waiting runs after run %s failed; the sweeper will release them", run.pk)


def release_waiting_runs():
    """The sweeper's pass: every contestant and GPU type with waiting runs gets its free slots filled.
    Returns how many runs were released."""
    pairs = (Run.objects.filter(status=RunStatus.WAITING, rejudge__isnull=True, confirms__isnull=True)
             .values_list("submission__contestant_id", "gpu_type_id").order_by().distinct())
    released = 0
    for contestant_id, gpu_type_id in list(pairs):
        with transaction.atomic():
            released += release(contestant_id, gpu_type_id)
    return released


def queue_position(run):
    """1-based place of a queued run's job among its GPU type's jobs (the fresh queue, then the
    rejudge queue), or None when it is not waiting in Redis."""
    if run.status != RunStatus.QUEUED or not run.rq_job_id:
        return None
    position = queueing.queue_position(run.queue_name, run.rq_job_id)
    if position is not None and run.behind_fresh_runs:
        position += queueing.queue_length(run.gpu_type.queue_name)
    return position


def runs_ahead(run):
    """For a waiting run: how many of its contestant's runs on that GPU type go first (queued or
    waiting longer); None for any other run."""
    if run.status != RunStatus.WAITING:
        return None
    return _fresh_runs(run.submission.contestant_id, run.gpu_type_id).filter(
        status__in=(RunStatus.QUEUED, RunStatus.WAITING), pk__lt=run.pk).count()
