"""The order runs are judged in (docs/architecture.md, "Scheduling"): the policy; the transitions it
decides are made by run_states.

- A final system test's runs (and their second judgings) go to `gpu.<type>.final`, fresh runs to
  `gpu.<type>`, a rejudge's runs and second judgings to `gpu.<type>.rejudge`; agents read them in that
  order (RQ takes its queues in order): the final test, judged after the season's end, is held up by
  nothing, and a rejudge never delays a contestant's submission.
- One contestant has at most MAX_QUEUED_RUNS_PER_CONTESTANT fresh runs waiting in Redis per GPU type;
  more stay in the database (`waiting`) and are released oldest first when one of the contestant's
  runs on that type leaves the queue (started, finished, cancelled, given up), in the transaction
  that changed it (the job is pushed on commit). A burst therefore takes at most `cap` places ahead of
  another contestant's run, and the sweeper releases whatever a failed release left waiting.
"""
from django.conf import settings
from django.db.models import Count, Q

from submissions import queueing
from submissions.models import Run, RunStatus


def cap():
    """Fresh runs per contestant and GPU type allowed in Redis at once; None: no cap."""
    value = settings.MAX_QUEUED_RUNS_PER_CONTESTANT
    return value if value and value > 0 else None


def _fresh_runs(contestant_id, gpu_type_id):
    return Run.objects.filter(submission__contestant_id=contestant_id, gpu_type_id=gpu_type_id, rejudge__isnull=True,
                              confirms__isnull=True)


def must_wait(run, contestant_id):
    """Whether a new run waits in the database instead of going to its queue: its contestant has `cap`
    fresh runs queued on that GPU type, or older ones waiting (they go first). A rejudge's runs, second
    judgings and a final system test's runs are never capped (the organizers' and the site's own)."""
    limit = cap()
    if not run.fresh or limit is None:
        return False
    runs = _fresh_runs(contestant_id, run.gpu_type_id).exclude(pk=run.pk)
    counts = runs.aggregate(queued=Count("pk", filter=Q(status=RunStatus.QUEUED)),
                            waiting=Count("pk", filter=Q(status=RunStatus.WAITING)))
    return bool(counts["waiting"]) or counts["queued"] >= limit


def next_waiting(contestant_id, gpu_type_id):
    """The contestant's waiting runs on this GPU type that free slots let go now, oldest first."""
    limit = cap()
    runs = _fresh_runs(contestant_id, gpu_type_id)
    waiting = runs.filter(status=RunStatus.WAITING).order_by("pk")
    if limit is None:
        return waiting
    free = limit - runs.filter(status=RunStatus.QUEUED).count()
    return waiting[:free] if free > 0 else waiting.none()


def waiting_pairs():
    """(contestant, GPU type) of every fresh run waiting for a slot."""
    return list(Run.objects.filter(status=RunStatus.WAITING, rejudge__isnull=True, confirms__isnull=True)
                .values_list("submission__contestant_id", "gpu_type_id").order_by().distinct())


def queues_in_order(gpu_type):
    """The GPU type's queues in the order agents read them (profiler_agent/worker/queue_order.py)."""
    return [gpu_type.final_queue_name, gpu_type.queue_name, gpu_type.rejudge_queue_name]


def queue_position(run):
    """1-based place of a queued run's job among its GPU type's jobs (its final test's queue, then the
    fresh queue, then the rejudge queue), or None when it is not waiting in Redis."""
    if run.status != RunStatus.QUEUED or not run.rq_job_id:
        return None
    position = queueing.queue_position(run.queue_name, run.rq_job_id)
    if position is None:
        return None
    ahead = queues_in_order(run.gpu_type)
    return position + sum(queueing.queue_length(name) for name in ahead[:ahead.index(run.queue_name)])


def runs_ahead(run):
    """For a waiting run: how many of its contestant's runs on that GPU type go first (queued or
    waiting longer); None for any other run."""
    if run.status != RunStatus.WAITING:
        return None
    return _fresh_runs(run.submission.contestant_id, run.gpu_type_id).filter(
        status__in=(RunStatus.QUEUED, RunStatus.WAITING), pk__lt=run.pk).count()
