"""Organizers' decisions on submissions."""
from django.db import transaction

from submissions.models import Review, ReviewDecision
from submissions.services import audit, standings


def _review_state(review):
    if review is None:
        return None
    return {"decision": review.decision, "base_score": review.base_score, "bonus": review.bonus, "rubric": review.rubric}


@transaction.atomic
def review_submission(submission, reviewer, decision, *, reason="", rubric=None, bonus=0.0):
    if decision not in ReviewDecision.values:
        raise ValueError(f"decision must be one of {', '.join(ReviewDecision.values)}")
    if decision == ReviewDecision.REJECTED and not reason.strip():
        raise ValueError("a rejection needs a reason")
    rubric = dict(rubric or {})
    previous = submission.reviews.order_by("-created_at", "-pk").first()
    review = Review.objects.create(
        submission=submission,
        reviewer=reviewer,
        decision=decision,
        reason=reason,
        rubric=rubric,
        base_score=float(sum(rubric.values())) if decision == ReviewDecision.ACCEPTED else 0.0,
        bonus=float(bonus) if decision == ReviewDecision.ACCEPTED else 0.0,
    )
    audit.record("review." + decision, submission, actor=reviewer, before=_review_state(previous),
                 after=_review_state(review), reason=reason)
    standings.refresh_for(submission.issue.season, submission.contestant)
    return review
