"""Rejudging: new runs for a submission, an issue or a season; the old runs stay as history."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import Rejudge, RejudgeScope, RunStatus, Submission
from submissions.services import audit, judging


class RejudgeRefused(ValueError):
    pass


def _submissions(scope, target):
    if scope == RejudgeScope.SUBMISSION:
        return Submission.objects.filter(pk=target.pk)
    if scope == RejudgeScope.ISSUE:
        return Submission.objects.filter(issue=target)
    return Submission.objects.filter(issue__season=target)


def _label(scope, target):
    return {RejudgeScope.SUBMISSION: lambda t: str(t.pk), RejudgeScope.ISSUE: lambda t: t.code,
            RejudgeScope.SEASON: lambda t: t.code}[scope](target)


@transaction.atomic
def rejudge(scope, target, actor, reason):
    """Queue new runs for every submission in scope; returns the Rejudge that tracks their progress."""
    if scope not in RejudgeScope.values:
        raise RejudgeRefused(_("the scope must be one of %(known)s") % {"known": ", ".join(RejudgeScope.values)})
    if not reason.strip():
        raise RejudgeRefused(_("a rejudge needs a reason (it is kept in the audit trail)"))
    submissions = list(_submissions(scope, target).select_related("issue__season").order_by("pk"))
    if not submissions:
        raise RejudgeRefused(_("nothing to rejudge: %(scope)s %(target)s has no submissions")
                             % {"scope": RejudgeScope(scope).label, "target": _label(scope, target)})
    batch = Rejudge.objects.create(scope=scope, target=_label(scope, target), requested_by=actor, reason=reason.strip())
    for submission in submissions:
        runs = judging.create_runs(submission, rejudge=batch)
        audit.record("submission.rejudged", submission, actor=actor, after={"rejudge": batch.pk, "runs": [r.pk for r in runs]},
                     reason=reason.strip())
    return batch


def progress(batch):
    """(finished runs, all runs) of a rejudge."""
    runs = batch.runs.all()
    return runs.filter(status=RunStatus.DONE).count(), runs.count()
