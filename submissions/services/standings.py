"""Materialized standings: a contestant's row is recomputed when one of their reviews or runs changes."""
from django.db import transaction
from django.db.models import Max, Min

from submissions.models import ReviewDecision, Run, Standing, Submission, Verdict
from submissions.ranking import get_rule


def _latest_reviews(submissions):
    """The latest review of each submission that has one, keyed by submission id."""
    latest = {}
    for submission in submissions:
        review = submission.reviews.order_by("-created_at", "-pk").first()
        if review is not None:
            latest[submission.pk] = review
    return latest


def compute_row(season, contestant):
    """The standing's values from the contestant's submissions and reviews in the season."""
    submissions = list(
        Submission.objects.filter(issue__season=season, contestant=contestant).prefetch_related("reviews")
    )
    reviews = _latest_reviews(submissions)
    # One accepted sample per issue: its latest accepted submission's review counts.
    counted = {}
    for submission in sorted(submissions, key=lambda s: (s.created_at, s.pk)):
        review = reviews.get(submission.pk)
        if review is not None and review.decision == ReviewDecision.ACCEPTED:
            counted[submission.issue_id] = review
    times = Submission.objects.filter(issue__season=season, contestant=contestant).aggregate(first=Min("created_at"))
    best = Run.objects.filter(
        submission__issue__season=season, submission__contestant=contestant, verdict=Verdict.PASSED
    ).aggregate(best=Max("speedup"))
    base = sum(r.base_score for r in counted.values())
    bonus = sum(r.bonus for r in counted.values())
    return {
        "accepted_count": len(counted),
        "base_score": base,
        "bonus": bonus,
        "total_score": base + bonus,
        "submission_count": len(submissions),
        "first_submission_at": times["first"],
        "last_accepted_at": max((r.created_at for r in counted.values()), default=None),
        "best_speedup": best["best"],
    }


@transaction.atomic
def refresh_for(season, contestant):
    """Recompute one contestant's row, then the season's ranks."""
    values = compute_row(season, contestant)
    standing, _ = Standing.objects.select_for_update().get_or_create(season=season, contestant=contestant)
    changed = any(getattr(standing, k) != v for k, v in values.items())
    if changed:
        for key, value in values.items():
            setattr(standing, key, value)
        standing.save()
        rerank(season)
    return standing


def rerank(season):
    """Assign ranks with the season's rule; only rows whose rank moved are written."""
    rule = get_rule(season.ranking_rule)
    rows = list(Standing.objects.filter(season=season).select_for_update())
    before = {s.pk: s.rank for s in rows}
    rule.assign_ranks(rows)
    moved = [s for s in rows if before[s.pk] != s.rank]
    Standing.objects.bulk_update(moved, ["rank"], batch_size=1000)
    return len(moved)
