"""Organizers' decisions on submissions, scored with the season's rubric."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions import rubrics, selectors
from submissions.models import Review, ReviewDecision
from submissions.services import audit, standings


class ReviewRefused(ValueError):
    """The review cannot be recorded as given; the message says what to fix."""


def _review_state(review):
    if review is None:
        return None
    return {"decision": review.decision, "base_score": review.base_score, "bonus": review.bonus,
            "rubric": review.rubric, "reason": review.reason, "override_reason": review.override_reason}


def prefill(submission):
    """The season rubric's points suggested by the submission's files and latest runs."""
    rubric = rubrics.rubric_of(submission.issue.season)
    files = {f.path: f.content for f in submission.files.all()}
    return rubric.prefill(submission, files, selectors.latest_runs(submission))


@transaction.atomic
def review_submission(submission, reviewer, decision, *, reason="", rubric=None, override_reason=""):
    """Accept (with rubric points) or reject (with a reason). Points that differ from what the runs
    suggest are an override and need their own reason. Every review is a new row; none is edited."""
    if decision not in ReviewDecision.values:
        raise ReviewRefused(_("the decision must be one of %(known)s") % {"known": ", ".join(ReviewDecision.values)})
    if decision == ReviewDecision.REJECTED and not reason.strip():
        raise ReviewRefused(_("a rejection needs a reason"))
    season_rubric = rubrics.rubric_of(submission.issue.season)
    suggested = prefill(submission)
    try:
        points = season_rubric.clean_points(suggested if rubric is None else rubric)
    except rubrics.RubricPointsError as exc:
        raise ReviewRefused(str(exc))
    overridden = sorted(k for k in points if points[k] != suggested.get(k, 0.0))
    if decision == ReviewDecision.ACCEPTED and overridden and not override_reason.strip():
        labels = ", ".join(str(season_rubric.item(k).label) for k in overridden)
        raise ReviewRefused(_("points differ from what the runs suggest (%(items)s); give a reason for the override")
                            % {"items": labels})
    accepted = decision == ReviewDecision.ACCEPTED
    base, bonus = season_rubric.totals(points) if accepted else (0.0, 0.0)
    previous = submission.reviews.order_by("-created_at", "-pk").first()
    review = Review.objects.create(
        submission=submission, reviewer=reviewer, decision=decision, reason=reason.strip(),
        rubric=points if accepted else {}, rubric_prefill=suggested,
        override_reason=override_reason.strip() if accepted and overridden else "",
        base_score=base, bonus=bonus,
    )
    audit.record("review." + decision, submission, actor=reviewer, before=_review_state(previous),
                 after=_review_state(review), reason=reason.strip())
    if accepted and overridden:
        audit.record("score.overridden", submission, actor=reviewer,
                     before={k: suggested.get(k, 0.0) for k in overridden}, after={k: points[k] for k in overridden},
                     reason=override_reason.strip())
    standings.refresh_for(submission.issue.season, submission.contestant, actor=reviewer,
                          reason=f"review of #{submission.pk}: {decision}")
    return review
