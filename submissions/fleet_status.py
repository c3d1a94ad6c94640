"""Read side of the fleet (for the organizers' fleet page and its JSON twin): each worker with its
state and counters, computed in one query from the workers and their runs; each GPU type's queues,
one aggregate query plus one Redis round trip of LLENs, whatever the backlog."""
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min, OuterRef, Q, Subquery
from django.utils import timezone

from submissions import queueing
from submissions.models import Agent, AgentWorker, GpuType, Run, RunStatus, SubmissionMode, Verdict

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
                  judging_submission_id=Subquery(running.values("submission_id")[:1]),
                  judging_started_at=Subquery(running.values("started_at")[:1]),
                  # a run cancelled while it was judged was not judged
                  judged_last_hour=Count("runs", filter=finished_since(timedelta(hours=1))
                                         & ~Q(runs__verdict=Verdict.CANCELLED)),
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


def workers_online(now=None):
    """How many workers could start a run of each GPU type now, {gpu_type_id: count}: workers that sent
    a heartbeat within FLEET_WORKER_SILENT_SECONDS and are not draining, of active agents, counted for
    the GPU types their agent is granted. An agent granted the CPU type and GPU types too (the demo's
    one agent) splits by what each worker reports: one without a GPU serves the CPU type, one with a
    GPU the others. Two queries, whatever the fleet's size."""
    now = now or timezone.now()
    fresh = now - timedelta(seconds=settings.FLEET_WORKER_SILENT_SECONDS)
    grants = {}
    for agent_id, gpu_type_id, slug in Agent.gpu_types.through.objects.filter(agent__is_active=True).values_list(
            "agent_id", "gputype_id", "gputype__slug"):
        grants.setdefault(agent_id, []).append((gpu_type_id, GpuType(slug=slug).is_cpu))
    counts = {}
    for agent_id, gpu_uuid in AgentWorker.objects.filter(
            last_heartbeat_at__gte=fresh, draining=False, agent__is_active=True).values_list("agent_id", "gpu_uuid"):
        types = grants.get(agent_id, [])
        if len({is_cpu for _, is_cpu in types}) == 2:
            types = [(pk, is_cpu) for pk, is_cpu in types if is_cpu == (not gpu_uuid)]
        for gpu_type_id, _ in types:
            counts[gpu_type_id] = counts.get(gpu_type_id, 0) + 1
    return counts


def reading_no_final_queue(gpu_types, now=None):
    """Of `gpu_types`, those with workers online (workers_online) none of whose agents declares in its
    heartbeats the type's final system test queue: agents from before that queue, which never take a
    final system test's run (it waits there until an upgraded agent connects)."""
    now = now or timezone.now()
    online = workers_online(now)
    fresh = now - timedelta(seconds=settings.FLEET_WORKER_SILENT_SECONDS)
    declared = [set(queues or []) for queues in Agent.objects.filter(
        is_active=True, workers__last_heartbeat_at__gte=fresh, workers__draining=False).distinct()
        .values_list("queues", flat=True)]
    return [gpu_type for gpu_type in gpu_types
            if online.get(gpu_type.pk) and not any(gpu_type.final_queue_name in queues for queues in declared)]


def short_uuid(uuid):
    """`GPU-3f2a9c1e…`: enough to tell a host's GPUs apart on a page (the JSON keeps the whole UUID)."""
    return uuid if len(uuid) <= 13 else f"{uuid[:12]}…"


def queues(now=None):
    """Per GPU type: jobs waiting in Redis (the final system test's queue, the fresh queue and the
    rejudge queue, one LLEN each, in one round trip), runs waiting in the database behind the per-contestant cap, the unfinished runs (queued,
    waiting or running) of each submission mode (`by_mode`), and the oldest queued run's enqueue time
    and age in seconds."""
    now = now or timezone.now()
    unfinished = ~Q(runs__status=RunStatus.DONE)
    by_mode = {f"{mode}_runs": Count("runs", filter=unfinished & Q(runs__submission__mode=mode))
               for mode in SubmissionMode.values}
    types = list(GpuType.objects.annotate(
        **by_mode,
        waiting_runs=Count("runs", filter=Q(runs__status=RunStatus.WAITING)),
        queued_runs=Count("runs", filter=Q(runs__status=RunStatus.QUEUED)),
        oldest_queued_at=Min("runs__enqueued_at", filter=Q(runs__status=RunStatus.QUEUED)),
    ).order_by("slug"))
    with queueing.connection().pipeline(transaction=False) as pipe:
        for gpu_type in types:
            for name in (gpu_type.final_queue_name, gpu_type.queue_name, gpu_type.rejudge_queue_name):
                pipe.llen(queueing.judging_queue(name).key)
        lengths = pipe.execute()
    for gpu_type, final, fresh, rejudge in zip(types, lengths[::3], lengths[1::3], lengths[2::3]):
        gpu_type.final_depth, gpu_type.fresh_depth, gpu_type.rejudge_depth = final, fresh, rejudge
        gpu_type.by_mode = [(mode, label, getattr(gpu_type, f"{mode}_runs")) for mode, label in SubmissionMode.choices]
        oldest = gpu_type.oldest_queued_at
        gpu_type.oldest_queued_age_s = None if oldest is None else max(0, round((now - oldest).total_seconds()))
    return types


def overview(now=None):
    """What the fleet page shows: the workers and the queues, at one `now`."""
    now = now or timezone.now()
    rows = workers(now)
    for worker in rows:
        worker.gpu_uuid_short = short_uuid(worker.gpu_uuid)
        worker.heartbeat_age_s = (None if worker.last_heartbeat_at is None
                                  else max(0, round((now - worker.last_heartbeat_at).total_seconds())))
        # how long its run has been judged, against the time after which the site hands the run back
        # (RUN_DEADLINE_SECONDS: the agent's own limits are within it)
        worker.judging_elapsed_s = (None if worker.judging_started_at is None
                                    else max(0, int((now - worker.judging_started_at).total_seconds())))
    return {"now": now, "workers": rows, "queues": queues(now),
            "silent_after_s": settings.FLEET_WORKER_SILENT_SECONDS, "run_deadline_s": settings.RUN_DEADLINE_SECONDS}


def _iso(value):
    return value.isoformat() if value else None


def overview_json(data):
    """The JSON twin of the fleet page: the same fields, whole UUIDs, ISO times, ages in seconds."""
    return {
        "now": _iso(data["now"]), "silent_after_s": data["silent_after_s"], "run_deadline_s": data["run_deadline_s"],
        "workers": [{
            "id": w.pk, "agent": w.agent.name, "agent_active": w.agent.is_active, "agent_trusted": w.agent.trusted, "name": w.name,
            "gpu": {"index": w.gpu_index, "uuid": w.gpu_uuid, "model": w.gpu_model, "driver": w.driver,
                    "memory_bytes": w.memory_bytes},
            "state": w.state, "judging_run": w.judging_run_id, "judging_elapsed_s": w.judging_elapsed_s,
            "draining": w.draining, "drain_reason": w.drain_reason,
            "last_heartbeat_at": _iso(w.last_heartbeat_at), "heartbeat_age_s": w.heartbeat_age_s,
            "harness_version": w.harness_version, "judged_last_hour": w.judged_last_hour,
            "failures_last_day": w.failures_last_day,
        } for w in data["workers"]],
        "queues": [{
            "gpu_type": q.slug, "name": q.name, "queue": q.queue_name, "rejudge_queue": q.rejudge_queue_name,
            "final_queue": q.final_queue_name, "final_depth": q.final_depth,
            "fresh_depth": q.fresh_depth, "rejudge_depth": q.rejudge_depth, "queued_runs": q.queued_runs,
            "waiting_runs": q.waiting_runs, "oldest_queued_at": _iso(q.oldest_queued_at),
            "oldest_queued_age_s": q.oldest_queued_age_s,
            "unfinished_runs_by_mode": {mode: count for mode, _label, count in q.by_mode},
        } for q in data["queues"]],
    }
