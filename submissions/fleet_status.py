"""Read side of the fleet (for the organizers' fleet page and its JSON twin): each worker with its
state and counters, computed in one query from the workers and their runs."""
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery
from django.utils import timezone

from submissions.models import AgentWorker, Run, RunStatus, Verdict

SILENT, DRAINING, JUDGING, IDLE = "silent", "draining", "judging", "idle"


def workers(now=None):
    """Every worker with `judging_run_id` (the run bound to it and running, from the runs themselves),
    `judged_last_hour` and `failures_last_day` (internal errors) annotated, and `state` set."""
    now = now or timezone.now()
    running = Run.objects.filter(worker=OuterRef("pk"), status=RunStatus.RUNNING).order_by("-started_at")
    finished_since = lambda delta: Q(runs__status=RunStatus.DONE, runs__finished_at__gte=now - delta)  # noqa: E731
    rows = list(
        AgentWorker.objects.select_related("agent")
        .annotate(judging_run_id=Subquery(running.values("pk")[:1]),
                  judged_last_hour=Count("runs", filter=finished_since(timedelta(hours=1))),
                  failures_last_day=Count("runs", filter=finished_since(timedelta(days=1))
                                          & Q(runs__verdict=Verdict.INTERNAL_ERROR)))
        .order_by("agent__name", "name")
    )
    for worker in rows:
        worker.state = state_of(worker, worker.judging_run_id, now)
    return rows


def state_of(worker, judging_run_id, now=None):
    """silent (no heartbeat for FLEET_WORKER_SILENT_SECONDS), else draining, judging or idle."""
    now = now or timezone.now()
    silent_after = timedelta(seconds=settings.FLEET_WORKER_SILENT_SECONDS)
    if worker.last_heartbeat_at is None or now - worker.last_heartbeat_at > silent_after:
        return SILENT
    if worker.draining:
        return DRAINING
    return JUDGING if judging_run_id else IDLE
