"""Ranking rules order standings as the seeds say; ties share a rank; unscored rows come last."""
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from submissions.ranking import get_rule

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def row(cid, accepted=0, base=0.0, bonus=0.0, total=None, count=0, first=None):
    return SimpleNamespace(contestant_id=cid, accepted_count=accepted, base_score=base, bonus=bonus,
                           total_score=base + bonus if total is None else total, submission_count=count,
                           first_submission_at=first, rank=None)


def ranks(rule, rows):
    return [(r.contestant_id, r.rank) for r in get_rule(rule).assign_ranks(rows)]


def test_accepted_count_then_base_then_bonus_with_shared_ties_and_unscored_last():
    rows = [row(1, accepted=2, base=10, bonus=5), row(2, accepted=3, base=1), row(3, accepted=2, base=10, bonus=9),
            row(4, accepted=2, base=12), row(5), row(6, accepted=2, base=10, bonus=5), row(7, count=4)]
    assert ranks("accepted_count", rows) == [(2, 1), (4, 2), (3, 3), (1, 4), (6, 4), (5, 6), (7, 6)]


def test_cumulative_score_then_more_submissions_then_earlier():
    rows = [row(1, base=60, count=2, first=T0), row(2, base=60, count=5, first=T0 + timedelta(days=2)),
            row(3, base=60, count=5, first=T0 + timedelta(days=1)), row(4, base=100, count=1, first=T0),
            row(5, count=9, first=T0), row(6, base=60, count=2, first=T0)]
    assert ranks("cumulative_score", rows) == [(4, 1), (3, 2), (2, 3), (1, 4), (6, 4), (5, 6)]


def test_unknown_rule_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown ranking rule 'elo'"):
        get_rule("elo")


@pytest.mark.parametrize("rule", ["accepted_count", "cumulative_score"])
def test_the_database_ranks_exactly_as_the_rule_says(db, rule):
    """The materialized ranks (computed in SQL) match the rule's reference ordering on the same rows."""
    from submissions.models import Contestant, Season, Standing
    from submissions.services.accounts import register_contestant
    from submissions.services.standings import rerank

    season = Season.objects.create(code="SX", name="ranking", ranking_rule=rule)
    crafted = [row(1, accepted=2, base=10, bonus=5, count=2, first=T0), row(2, accepted=3, base=1, count=5, first=T0),
               row(3, accepted=2, base=10, bonus=9, count=5, first=T0 + timedelta(days=1)),
               row(4, accepted=2, base=12, count=1, first=T0), row(5, count=9, first=T0),
               row(6, accepted=2, base=10, bonus=5, count=2, first=T0), row(7, count=4, first=T0 + timedelta(days=3)),
               row(8, accepted=1, base=14, count=5, first=T0 + timedelta(days=2))]
    ids = {}
    for r in crafted:
        contestant = register_contestant(f"u{r.contestant_id}", "pw-123456789")
        ids[contestant.pk] = r.contestant_id
        Standing.objects.create(season=season, contestant=contestant, accepted_count=r.accepted_count,
                                base_score=r.base_score, bonus=r.bonus, total_score=r.total_score,
                                submission_count=r.submission_count, first_submission_at=r.first_submission_at)
    assert rerank(season) == len(crafted)
    stored = sorted((ids[s.contestant_id], s.rank) for s in Standing.objects.filter(season=season))
    assert stored == sorted(ranks(rule, crafted))
    assert rerank(season) == 0  # nothing moved: nothing written
