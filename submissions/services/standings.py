"""Materialized standings: a contestant's row is recomputed when one of their reviews or runs changes."""
from django.db import connection, transaction
from django.db.models import Min

import math

from submissions import board_ranks, board_versions, final_test_reads, season_access_reads
from submissions.models import GpuStanding, ReviewDecision, Season, Standing, Submission
from submissions.models import SubmissionMode
from submissions.rules import ranked_runs
from submissions.rules.ranking import GpuSpeedupRule, rule_of
from submissions.services import audit


def _latest_reviews(submissions):
    """The latest review of each submission that has one, keyed by submission id."""
    latest = {}
    for submission in submissions:
        review = submission.reviews.order_by("-created_at", "-pk").first()
        if review is not None:
            latest[submission.pk] = review
    return latest


def counted_submission_ids(season, contestant):
    """The contestant's submissions that count in the season: the latest accepted one per issue."""
    submissions = list(
        Submission.objects.filter(issue__season=season, contestant=contestant).prefetch_related("reviews"))
    return _accepted_submission_ids(submissions, _latest_reviews(submissions))


def _accepted_submission_ids(submissions, reviews):
    """The latest accepted submission of each issue (one accepted sample per issue); ranked ones only."""
    counted = {}
    for submission in sorted(submissions, key=lambda s: (s.created_at, s.pk)):
        if submission.mode != SubmissionMode.RANKED:
            continue  # a test or benchmark submission never counts
        review = reviews.get(submission.pk)
        if review is not None and review.decision == ReviewDecision.ACCEPTED:
            counted[submission.issue_id] = submission.pk
    return set(counted.values())


def compute_gpu_rows(season, contestant):
    """Per GPU type of the season: the contestant's accepted samples that rank there, and their ranked
    speedups (ranked_runs: the median of a sample's passed runs whose time may rank there)."""
    submissions = list(
        Submission.objects.filter(issue__season=season, contestant=contestant).prefetch_related("reviews")
    )
    accepted = _accepted_submission_ids(submissions, _latest_reviews(submissions))
    runs, _ = final_test_reads.ranking_runs(season, accepted)
    ranked = ranked_runs.figures(runs.only(*ranked_runs.FIELDS))
    rows = {}
    for gpu_type in season.gpu_types.all():
        speedups = [f.speedup for (_, g), f in ranked.items() if g == gpu_type.pk]
        rows[gpu_type.pk] = {
            "passed_count": len(speedups),
            "geomean_speedup": math.exp(sum(math.log(x) for x in speedups) / len(speedups)) if speedups else None,
            "best_speedup": max(speedups, default=None),
        }
    return rows


def refresh_gpu_rows(season, contestant):
    """Recompute the contestant's per-GPU rows (and their board keys: one row written per change)."""
    rule = GpuSpeedupRule()
    for gpu_type_id, values in compute_gpu_rows(season, contestant).items():
        row, _ = GpuStanding.objects.select_for_update().get_or_create(
            season=season, gpu_type_id=gpu_type_id, contestant=contestant)
        if any(getattr(row, k) != v for k, v in values.items()):
            for key, value in values.items():
                setattr(row, key, value)
            row.board_key = rule.board_key(row)
            row.save()


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
        if review is not None and review.decision == ReviewDecision.ACCEPTED and submission.mode == SubmissionMode.RANKED:
            counted[submission.issue_id] = review
    times = (Submission.objects.filter(issue__season=season, contestant=contestant, mode=SubmissionMode.RANKED)
             .aggregate(first=Min("created_at")))
    # around a final system test, its runs decide which samples still count and how fast they are
    runs, kept = final_test_reads.ranking_runs(season, [review.submission_id for review in counted.values()])
    counted = {issue: review for issue, review in counted.items() if review.submission_id in kept}
    # the best ranked figure of the contestant's accepted samples (never the best single run: ranked_runs;
    # never an unreviewed submission's: the public board shows only what an organizer accepted)
    best = max((f.speedup for f in ranked_runs.figures(runs.only(*ranked_runs.FIELDS)).values()), default=None)
    base = sum(r.base_score for r in counted.values())
    bonus = sum(r.bonus for r in counted.values())
    return {
        "accepted_count": len(counted),
        "base_score": base,
        "bonus": bonus,
        "total_score": base + bonus,
        "submission_count": sum(1 for s in submissions if s.mode == SubmissionMode.RANKED),
        "first_submission_at": times["first"],
        "last_accepted_at": max((r.created_at for r in counted.values()), default=None),
        "best_speedup": best,
    }


def _audited(values):
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in values.items()}


@transaction.atomic
def refresh_for(season, contestant, *, actor=None, actor_label="", reason=""):
    """Recompute one contestant's row and its place in the season's order; a change is audited. A
    contestant banned from the season has no row (None): a ban keeps them off every board."""
    # first: the season's row lock orders this season's writers; nothing has changed yet
    board_versions.bump(season.pk, changes={})
    if season_access_reads.is_banned(season, contestant):  # read under the lock a ban takes too
        remove(season, contestant, actor=actor, actor_label=actor_label, reason=reason)
        return None
    values = compute_row(season, contestant)
    standing, _ = Standing.objects.select_for_update().get_or_create(season=season, contestant=contestant)
    changed = {k: v for k, v in values.items() if getattr(standing, k) != v}
    if changed:
        before = _audited({k: getattr(standing, k) for k in changed})
        store(season, standing, values)
        audit.record("standing.changed", standing, actor=actor, actor_label=actor_label,
                     before=before, after=_audited(changed), reason=reason)
    refresh_gpu_rows(season, contestant)
    return standing


STANDING_FIELDS = ("accepted_count", "base_score", "bonus", "total_score", "submission_count", "first_submission_at",
                   "last_accepted_at", "best_speedup")


@transaction.atomic
def remove(season, contestant, *, actor=None, actor_label="", reason=""):
    """Takes the contestant's rows off the season's boards, live and per GPU type (a ban:
    services/season_access.py), auditing what the season's row held; returns whether there were any.
    Nothing is lost: the rows are computed from the submissions and reviews again (refresh_for) when
    the ban is lifted."""
    standing = Standing.objects.filter(season=season, contestant=contestant).first()
    gpu_rows = GpuStanding.objects.filter(season=season, contestant=contestant)
    if standing is None and not gpu_rows.exists():
        return False
    board_versions.bump(season.pk)  # every board of the season: a row less moves every row after it
    gpu_rows.delete()
    if standing is not None:
        audit.record("standing.removed", standing, actor=actor, actor_label=actor_label, reason=reason,
                     before=_audited({k: getattr(standing, k) for k in STANDING_FIELDS}))
        standing.delete()
    return True


def _current_rule(season):
    # the rule as committed, read under the season's row lock (board_versions.bump): the caller's copy of
    # the season may predate an organizer's change of rule that committed while this transaction waited
    return rule_of(Season.objects.only("ranking_rule", "ranking_settings").get(pk=season.pk))


def store(season, standing, values):
    """Writes `values` to the standing (locked by the caller, in the season's lock) with its board key:
    one row, wherever the contestant moves (board_ranks reads the ranks)."""
    before = board_ranks.key_of(standing)
    for key, value in values.items():
        setattr(standing, key, value)
    standing.board_key = _current_rule(season).board_key(standing)
    # the rows between its old place and its new one are all that changed (board_versions' journal)
    standing.board_move = (before, standing.board_key)
    try:
        standing.save()
    finally:
        del standing.board_move


@transaction.atomic  # the new board version is published with the new keys, never before them
def rerank(season):
    """Re-keys every standing of the season by its rule and settings (after an organizer changes them);
    returns how many rows were re-keyed."""
    board_versions.bump(season.pk)
    rule = _current_rule(season)
    moved = [(key, standing.pk) for standing in Standing.objects.filter(season=season).select_for_update()
             if board_ranks.key_of(standing) != (key := rule.board_key(standing))]
    # one prepared UPDATE by primary key per row: bulk_update's CASE over 1,000 ids a statement took
    # seconds for a season of 10,000 (bench/site/leaderboard.py)
    table = connection.ops.quote_name(Standing._meta.db_table)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET board_key = %s WHERE id = %s", moved)
    return len(moved)
