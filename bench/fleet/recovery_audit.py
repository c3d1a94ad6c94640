"""What bench/fleet/recovery.py observes of the platform: the runs and the jobs in Redis while faults come and go
(has it recovered? resumed? was the killed or cut-off run judged again? what became of a late
report?), and the audit at the end: exactly one final verdict per submission and GPU type."""
import time


def run_rows():
    from django.db import close_old_connections

    from submissions.models import Run

    close_old_connections()
    return list(Run.objects.values("pk", "status", "attempts", "rq_job_id", "agent_id", "started_at", "finished_at",
                                   "gpu_type__slug"))


def live_jobs(gpu_types, agent_names):
    """The ids of the jobs in Redis: waiting in a queue's list or taken into a host's claim list."""
    import redis

    from submissions import queueing
    from submissions.services import agent_redis

    try:
        alive = set()
        for gpu_type in gpu_types:
            for queue in agent_redis.queue_names(gpu_type.slug):
                alive |= queueing.waiting_job_ids(queue)
        for ids in queueing.claimed_job_ids([agent_redis.claim_list(name) for name in agent_names]).values():
            alive |= set(ids)
        return alive
    except redis.RedisError:
        return None


class Fault:
    def __init__(self, kind, at):
        self.kind, self.at = kind, at
        self.casualty = None  # (run pk, attempt) a killed (or cut off) agent held
        self.recovered_s = self.judged_again_s = self.resumed_s = None
        self.handed_back_s = self.healed_s = self.late_report = None  # a partition's


def recovered(platform, fault):
    """Whether the platform is whole again after `fault` (see the module's docstring)."""
    rows = run_rows()
    alive = live_jobs(platform.gpu_types, [agent.name for agent in platform.agents])
    if alive is None or not platform.site_answers():
        return False
    for row in rows:
        if row["status"] == "queued" and row["rq_job_id"] not in alive:
            return False
        if fault.casualty and (row["pk"], row["attempts"]) == fault.casualty and row["status"] == "running":
            return False
    return True


def resumed(since_wall):
    """A run started or finished after the fault (judging goes on), or nothing is left to judge."""
    rows = run_rows()
    return all(r["status"] == "done" for r in rows) or any(
        (r["started_at"] and r["started_at"].timestamp() > since_wall)
        or (r["finished_at"] and r["finished_at"].timestamp() > since_wall) for r in rows)


def handed_back(fault):
    pk, attempt = fault.casualty
    row = next(r for r in run_rows() if r["pk"] == pk)
    return row["attempts"] > attempt or row["status"] == "done"


def judged_again(fault):
    pk, attempt = fault.casualty
    row = next(r for r in run_rows() if r["pk"] == pk)
    return row["attempts"] > attempt and row["status"] in ("running", "done") or row["status"] == "done"


def timezone_now():
    from django.utils import timezone

    return timezone.now()


def wait_until(condition, timeout, poll=0.25):
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(poll)
    return None


def judging_agent(platform, min_running_s=2.0, max_running_s=None):
    """An agent process judging a run for a while (at most `max_running_s`: far from its end), and that
    run's (pk, attempt); the most recently started such run first."""
    from django.utils import timezone

    rows = sorted((r for r in run_rows() if r["status"] == "running" and r["started_at"]),
                  key=lambda r: r["started_at"], reverse=True)
    for row in rows:
        running_s = (timezone.now() - row["started_at"]).total_seconds()
        if running_s >= min_running_s and (max_running_s is None or running_s <= max_running_s):
            for agent in platform.agents:
                if agent.agent_pk == row["agent_id"] and agent.process.poll() is None and not agent.held:
                    return agent, (row["pk"], row["attempts"])
    return None


LATE_REPORT_WAIT_S = 60  # after the heal: a client that still tries reports within its back-off
LATE_REPORT_ACTIONS = ("run.late_report", "run.forged_report_refused", "run.progress_refused", "run.verdict")


def late_report_of(fault):
    """What the cut-off host's report of its run became: the first audit entry of that host on that run
    since the partition began, or "none" once its job ended in Redis without one (its client gave up
    while the link was down); None while neither."""
    from django.db import close_old_connections

    from submissions import queueing
    from submissions.models import AuditEntry

    close_old_connections()
    pk, attempt = fault.casualty
    entry = (AuditEntry.objects.filter(object_type="run", object_id=str(pk), actor_label=f"agent:{fault.agent_name}",
                                       action__in=LATE_REPORT_ACTIONS, created_at__gte=fault.cut_at)
             .order_by("created_at").first())
    if entry is not None:
        return entry.action
    job = queueing.job_id(pk, attempt, fault.gpu_slug)
    status = queueing.connection().hget(f"rq:job:{job}", "status")
    return "none" if status in (b"failed", b"finished", b"stopped", b"canceled", None) else None


def audit(platform, expected):
    """Exactly one final verdict per submission and GPU type, from the runs and the audit trail. A passed
    run that would change the board gets one confirming run on another host (second judging,
    services/confirming): counted apart, each with exactly one verdict too."""
    from django.db.models import Count

    from submissions.models import AuditEntry, Submission

    problems = []
    verdicts = dict(AuditEntry.objects.filter(action="run.verdict", object_type="run")
                    .values_list("object_id").annotate(n=Count("id")))
    counts = {"runs": 0, "second_judgings": 0, "lost": 0, "duplicated": 0, "stuck": 0, "wrong_verdict": 0,
              "internal_error": 0}
    for submission in Submission.objects.prefetch_related("runs__gpu_type"):
        runs = list(submission.runs.all())
        by_type, confirming = {}, {}
        for run in runs:
            if run.confirms_id is None:
                by_type.setdefault(run.gpu_type.slug, []).append(run)
            else:
                confirming.setdefault(run.confirms_id, []).append(run)
        for gpu_type in platform.gpu_types:
            got = by_type.get(gpu_type.slug, [])
            if len(got) != 1:
                counts["lost" if not got else "duplicated"] += 1
                problems.append(f"submission {submission.pk} has {len(got)} runs on {gpu_type.slug}")
        for confirmed, got in confirming.items():
            if len(got) > 1:
                counts["duplicated"] += 1
                problems.append(f"run {confirmed} has {len(got)} second judgings")
        for run in runs:
            counts["runs" if run.confirms_id is None else "second_judgings"] += 1
            n = verdicts.get(str(run.pk), 0)
            if run.status != "done":
                counts["stuck"] += 1
                problems.append(f"run {run.pk} is still {run.status} (attempt {run.attempts})")
            elif n != 1:
                counts["duplicated" if n > 1 else "lost"] += 1
                problems.append(f"run {run.pk} has {n} verdicts in the audit trail")
            if run.verdict == "internal_error":
                counts["internal_error"] += 1
            elif run.status == "done" and run.verdict != expected[submission.pk]:
                counts["wrong_verdict"] += 1
                problems.append(f"run {run.pk}: {run.verdict}, expected {expected[submission.pk]}")
    counts["attempts_max"] = max((r["attempts"] for r in run_rows()), default=0)
    counts["requeued"] = AuditEntry.objects.filter(action="run.requeued").count()
    counted = {"stale_reports_refused": "run.forged_report_refused", "starts_refused": "run.start_refused",
               "late_reports": "run.late_report", "claims_dropped": "run.claim_dropped",
               "quarantines": "agent.quarantined", "progress_refused": "run.progress_refused"}
    for key, action in counted.items():
        counts[key] = AuditEntry.objects.filter(action=action).count()
    for key in ("stale_reports_refused", "quarantines", "progress_refused"):  # each a sign of a wrong recovery
        if counts[key]:
            problems.append(f"{counts[key]} {counted[key]} in the audit trail")
    return counts, problems
