"""Read-side queries of the contest domain."""
from django.db.models import Prefetch

from submissions.models import Run, RunStatus, Submission


def submission_with_runs(submission_id):
    return (
        Submission.objects.select_related("issue__season", "contestant__user")
        .prefetch_related("files", Prefetch("runs", queryset=Run.objects.select_related("gpu_type").order_by("gpu_type__slug", "-created_at")))
        .filter(pk=submission_id)
        .first()
    )


def can_see_code(user, submission) -> bool:
    """Code and logs: the author and organizers only (others' code stays private)."""
    if not user.is_authenticated:
        return False
    return user.is_staff or submission.contestant.user_id == user.pk


def has_unfinished_runs(submission) -> bool:
    return any(run.status != RunStatus.DONE for run in submission.runs.all())


def latest_runs(submission):
    """The newest run per GPU type (rejudges add runs; older ones stay in history)."""
    latest = {}
    for run in submission.runs.all():
        current = latest.get(run.gpu_type_id)
        if current is None or (run.created_at, run.pk) > (current.created_at, current.pk):
            latest[run.gpu_type_id] = run
    return sorted(latest.values(), key=lambda r: r.gpu_type.slug)
