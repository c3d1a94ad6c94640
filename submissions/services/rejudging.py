"""Rejudging: new runs for a submission, an issue or a season; the old runs stay as history."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import Rejudge, RejudgeScope, Run, RunStatus, Submission, SubmissionMode
from submissions.services import audit, hardware, judging, reasons


class RejudgeRefused(ValueError):
    pass


def _submissions(scope, target):
    if scope == RejudgeScope.SUBMISSION:
        return Submission.objects.filter(pk=target.pk)
    # an issue's or a season's rejudge judges what ranks there: a test or benchmark submission is
    # rejudged alone, by its own page
    if scope == RejudgeScope.ISSUE:
        return Submission.objects.filter(issue=target, mode=SubmissionMode.RANKED)
    return Submission.objects.filter(issue__season=target, mode=SubmissionMode.RANKED)


def _label(scope, target):
    return {RejudgeScope.SUBMISSION: lambda t: str(t.pk), RejudgeScope.ISSUE: lambda t: t.code,
            RejudgeScope.SEASON: lambda t: t.code}[scope](target)


def _unstarted_rejudge_runs(submissions):
    """{(submission id, GPU type id): rejudge id} of the rejudge runs no agent has started yet."""
    runs = Run.objects.filter(submission__in=submissions, rejudge__isnull=False,
                              status__in=(RunStatus.QUEUED, RunStatus.WAITING)).order_by("pk")
    return {(r.submission_id, r.gpu_type_id): r.rejudge_id for r in runs.only("submission_id", "gpu_type_id", "rejudge_id")}


@transaction.atomic
def rejudge(scope, target, actor, reason):
    """Queue new runs for every submission in scope; returns the Rejudge that tracks their progress.
    A submission whose earlier rejudge's run on a GPU type no agent has started yet gets no second one
    there: both would judge the same code the same way, and the extra sample would move its ranked
    median (a double click, or two organizers at once). When nothing is new, the earlier rejudge is
    returned, with `already_queued` true."""
    if scope not in RejudgeScope.values:
        raise RejudgeRefused(_("the scope must be one of %(known)s") % {"known": ", ".join(RejudgeScope.values)})
    if not reason.strip():
        raise RejudgeRefused(_("a rejudge needs a reason (it is kept in the audit trail)"))
    if reasons.too_long(reason):
        raise RejudgeRefused(reasons.too_long(reason))
    # the submissions' rows only (`of`): a concurrent rejudge of them waits here and then sees this one's
    # runs; no_key: a run or flag inserted for one of them elsewhere does not wait
    submissions = list(_submissions(scope, target).select_for_update(of=("self",), no_key=True)
                       .select_related("issue__season").order_by("pk"))
    if not submissions:
        raise RejudgeRefused(_("nothing to rejudge: %(scope)s %(target)s has no submissions")
                             % {"scope": RejudgeScope(scope).label, "target": _label(scope, target)})
    pending = _unstarted_rejudge_runs(submissions)
    plans = []
    for submission in submissions:
        judged = hardware.plan_for(submission.issue.season, hardware.stored_files(submission)).judged
        fresh = [gpu for gpu in judged if (submission.pk, gpu.pk) not in pending]
        if fresh:
            plans.append((submission, fresh))
    if not plans and pending:
        earlier = Rejudge.objects.get(pk=max(pending.values()))
        earlier.already_queued = True
        return earlier
    batch = Rejudge.objects.create(scope=scope, target=_label(scope, target), requested_by=actor, reason=reason.strip())
    batch.already_queued = False
    for submission, gpu_types in plans:
        runs = judging.create_runs(submission, rejudge=batch, gpu_types=gpu_types)
        audit.record("submission.rejudged", submission, actor=actor, after={"rejudge": batch.pk, "runs": [r.pk for r in runs]},
                     reason=reason.strip())
    return batch


def progress(batch):
    """(finished runs, all runs) of a rejudge."""
    runs = batch.runs.all()
    return runs.filter(status=RunStatus.DONE).count(), runs.count()
