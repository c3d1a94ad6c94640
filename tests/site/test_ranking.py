"""Ranking rules order standings as the seeds say; ties share a rank; unscored rows come last.
Each rule validates its own per-season settings, and a setting moves ranks the same way in
Python (the reference) and as the site reads them from the stored board keys."""
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation

from submissions.rules.ranking import RankingSettingsError, get_rule

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def row(cid, accepted=0, base=0.0, bonus=0.0, total=None, count=0, first=None):
    return SimpleNamespace(contestant_id=cid, accepted_count=accepted, base_score=base, bonus=bonus,
                           total_score=base + bonus if total is None else total, submission_count=count,
                           first_submission_at=first, rank=None)


def ranks(rule, rows, settings=None):
    return [(r.contestant_id, r.rank) for r in get_rule(rule, settings).assign_ranks(rows)]


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


# ---- per-season settings -------------------------------------------------------------------


def test_without_bonus_breaking_ties_equal_accepted_and_base_share_a_rank():
    rows = [row(1, accepted=2, base=10, bonus=5), row(2, accepted=3, base=1), row(3, accepted=2, base=10, bonus=9),
            row(4, accepted=2, base=12), row(5), row(6, accepted=2, base=10, bonus=5), row(7, count=4)]
    # 3 led 1 and 6 on bonus alone; now the three share third place.
    assert ranks("accepted_count", rows, {"bonus_breaks_ties": False}) == [
        (2, 1), (4, 2), (1, 3), (3, 3), (6, 3), (5, 6), (7, 6)]


def test_bonus_outside_the_score_only_separates_equal_base_scores():
    rows = [row(1, base=50, bonus=25, count=1, first=T0), row(2, base=60, count=1, first=T0),
            row(3, base=60, bonus=10, count=1, first=T0)]
    assert ranks("cumulative_score", rows) == [(1, 1), (3, 2), (2, 3)]  # 75, 70, 60
    assert ranks("cumulative_score", rows, {"bonus_in_score": False}) == [(3, 1), (2, 2), (1, 3)]


def test_fewer_submissions_no_longer_lose_when_more_submissions_first_is_off():
    rows = [row(1, base=60, count=9, first=T0 + timedelta(days=1)), row(2, base=60, count=1, first=T0)]
    assert ranks("cumulative_score", rows) == [(1, 1), (2, 2)]
    assert ranks("cumulative_score", rows, {"more_submissions_first": False}) == [(2, 1), (1, 2)]


def test_defaults_are_filled_in_and_shown():
    assert get_rule("accepted_count").settings == {"bonus_breaks_ties": True}
    assert get_rule("cumulative_score", {"bonus_in_score": False}).settings == {
        "bonus_in_score": False, "more_submissions_first": True}


@pytest.mark.parametrize("rule, rule_settings, message", [
    ("accepted_count", {"bonus_counts": True},
     "unknown ranking settings for accepted_count: bonus_counts; allowed: bonus_breaks_ties"),
    ("accepted_count", {"bonus_breaks_ties": "no"},
     "the ranking setting 'bonus_breaks_ties' must be true or false, not \"no\""),
    ("cumulative_score", {"more_submissions_first": 0},
     "the ranking setting 'more_submissions_first' must be true or false, not 0"),
    ("cumulative_score", ["bonus_in_score"], "the ranking settings must be a JSON object, like {}"),
])
def test_invalid_settings_are_refused_with_a_message_naming_the_setting(rule, rule_settings, message):
    with pytest.raises(RankingSettingsError) as refused:
        get_rule(rule, rule_settings)
    assert str(refused.value) == message


def test_the_refusal_speaks_the_request_language():
    with translation.override("zh-hans"), pytest.raises(RankingSettingsError) as refused:
        get_rule("accepted_count", {"bonus_breaks_ties": "no"})
    assert str(refused.value) == "排名设置 'bonus_breaks_ties' 必须是 true 或 false，而不是 \"no\""


def test_season_validation_reports_the_ranking_settings_error(db):
    from submissions.models import Season

    season = Season(code="SV", name="validation", ranking_rule="cumulative_score",
                    ranking_settings={"bonus_breaks_ties": False})
    with pytest.raises(ValidationError) as refused:
        season.full_clean()
    assert refused.value.message_dict == {"ranking_settings": [
        "unknown ranking settings for cumulative_score: bonus_breaks_ties; "
        "allowed: bonus_in_score, more_submissions_first"]}
    season.ranking_settings = {"more_submissions_first": False}
    season.full_clean()  # valid now


# ---- the same ranks read from the stored board keys -----------------------------------------------------------------

CRAFTED = [row(1, accepted=2, base=10, bonus=5, count=2, first=T0), row(2, accepted=3, base=1, count=5, first=T0),
           row(3, accepted=2, base=10, bonus=9, count=5, first=T0 + timedelta(days=1)),
           row(4, accepted=2, base=12, count=1, first=T0), row(5, count=9, first=T0),
           row(6, accepted=2, base=10, bonus=5, count=2, first=T0), row(7, count=4, first=T0 + timedelta(days=3)),
           row(8, accepted=1, base=14, count=5, first=T0 + timedelta(days=2)),
           row(9, accepted=1, base=6, bonus=9, count=1, first=T0 + timedelta(days=4))]


def materialize(season, crafted):
    """Stored Standing rows with the crafted values; returns {contestant pk: crafted id}."""
    from submissions.models import Standing
    from submissions.services.accounts import register_contestant

    ids = {}
    for r in crafted:
        contestant = register_contestant(f"u{r.contestant_id}", "pw-123456789")
        ids[contestant.pk] = r.contestant_id
        Standing.objects.create(season=season, contestant=contestant, accepted_count=r.accepted_count,
                                base_score=r.base_score, bonus=r.bonus, total_score=r.total_score,
                                submission_count=r.submission_count, first_submission_at=r.first_submission_at)
    return ids


def stored_ranks(season, ids):
    """(crafted id, rank) of every standing, read the three ways the site reads them: a page's rows at
    once, one row alone, a whole board in order; they must agree."""
    from submissions import board_ranks
    from submissions.models import Standing

    rows = list(Standing.objects.filter(season=season).order_by("board_key", "contestant_id"))
    at_once = sorted((ids[s.contestant_id], s.rank) for s in board_ranks.attach(Standing.objects.filter(season=season),
                                                                               rows[::-1]))
    alone = sorted((ids[s.contestant_id], s.rank) for s in Standing.objects.filter(season=season))
    in_order = sorted((ids[s.contestant_id], s.rank) for s in board_ranks.in_order(rows, lambda s: s.season_id))
    assert at_once == alone == in_order
    assert paged_ranks(season, ids) == at_once
    return at_once


def paged_ranks(season, ids):
    """The ranks as pages of the whole board read them (selectors.rows_at): every page size, so that
    ties fall across a page's edge, by both of its paths (a plain slice; ids from the index first)."""
    from leaderboard import selectors
    from submissions.models import Standing

    board = Standing.objects.filter(season=season).select_related("contestant").order_by("board_key", "contestant_id")
    count, seen = board.count(), set()
    kept = selectors.DEFERRED_JOIN_FROM_OFFSET
    try:
        for selectors.DEFERRED_JOIN_FROM_OFFSET in (kept, 1):
            for size in range(1, count + 1):
                pages = [selectors.rows_at(board, offset, size, whole_board=True) for offset in range(0, count, size)]
                seen.add(tuple(sorted((ids[s.contestant_id], s.rank) for page in pages for s in page)))
    finally:
        selectors.DEFERRED_JOIN_FROM_OFFSET = kept
    assert len(seen) == 1, seen
    return list(seen.pop())


@pytest.mark.parametrize("rule, rule_settings", [
    ("accepted_count", {}), ("accepted_count", {"bonus_breaks_ties": False}),
    ("cumulative_score", {}), ("cumulative_score", {"bonus_in_score": False}),
    ("cumulative_score", {"more_submissions_first": False}),
    ("cumulative_score", {"bonus_in_score": False, "more_submissions_first": False}),
])
def test_the_database_ranks_exactly_as_the_rule_says(db, rule, rule_settings):
    """The ranks read from the stored board keys match the rule's reference ordering on the same rows."""
    from submissions.models import Season
    from submissions.services.standings import rerank

    season = Season.objects.create(code="SX", name="ranking", ranking_rule=rule, ranking_settings=rule_settings)
    ids = materialize(season, CRAFTED)
    scored = [r for r in CRAFTED if get_rule(rule, rule_settings).is_scored(r)]
    assert rerank(season) == len(scored) < len(CRAFTED)  # unscored rows keep the key they were made with
    assert stored_ranks(season, ids) == sorted(ranks(rule, CRAFTED, rule_settings))
    assert rerank(season) == 0  # nothing moved: nothing written


def test_changing_a_setting_re_ranks_the_stored_standings_and_is_audited(db):
    from submissions.models import AuditEntry, Season
    from submissions.services import seasons
    from submissions.services.accounts import register_contestant
    from submissions.services.standings import rerank

    season = Season.objects.create(code="SX", name="ranking", ranking_rule="accepted_count")
    ids = materialize(season, CRAFTED)
    rerank(season)
    assert (3, 3) in stored_ranks(season, ids) and (1, 4) in stored_ranks(season, ids)
    organizer = register_contestant("org", "pw-123456789", is_staff=True).user

    moved = seasons.change_ranking(season, "accepted_count", {"bonus_breaks_ties": False}, actor=organizer,
                                   reason="bonus only for prizes")
    assert moved == 7  # every scored row's key loses its bonus
    # 1 and 6 climb from 4th to share 3rd with 3, who led them on bonus.
    assert stored_ranks(season, ids) == sorted(ranks("accepted_count", CRAFTED, {"bonus_breaks_ties": False}))
    season.refresh_from_db()
    assert season.ranking_settings == {"bonus_breaks_ties": False}
    entry = AuditEntry.objects.get(action="season.ranking_changed")
    assert (entry.before, entry.after, entry.actor_label, entry.reason) == (
        {"ranking_rule": "accepted_count", "ranking_settings": {}},
        {"ranking_rule": "accepted_count", "ranking_settings": {"bonus_breaks_ties": False}},
        "org", "bonus only for prizes")

    # Switching the rule re-ranks everyone by the kernel contest's order.
    seasons.change_ranking(season, "cumulative_score", {"more_submissions_first": False}, actor=organizer,
                           reason="seed 000's rule")
    assert stored_ranks(season, ids) == sorted(ranks("cumulative_score", CRAFTED, {"more_submissions_first": False}))


def test_an_invalid_change_writes_nothing(db):
    from submissions.models import AuditEntry, Season
    from submissions.services import seasons

    season = Season.objects.create(code="SX", name="ranking", ranking_rule="accepted_count")
    with pytest.raises(RankingSettingsError, match="'bonus_breaks_ties' must be true or false"):
        seasons.change_ranking(season, "accepted_count", {"bonus_breaks_ties": "yes"})
    with pytest.raises(RankingSettingsError, match="unknown ranking rule 'elo'"):
        seasons.change_ranking(season, "elo", {})
    with pytest.raises(RankingSettingsError, match="say why the ranking rule of SX changes"):
        seasons.change_ranking(season, "cumulative_score", {}, reason="  ")
    season.refresh_from_db()
    assert (season.ranking_rule, season.ranking_settings) == ("accepted_count", {})
    assert not AuditEntry.objects.filter(action="season.ranking_changed").exists()


def _admin_form(season, **changes):
    data = {"code": season.code, "name": season.name, "description": "", "ranking_rule": season.ranking_rule,
            "ranking_settings": "{}", "starts_at_0": "2026-01-01", "starts_at_1": "00:00:00", "ends_at_0": "",
            "ends_at_1": "", "is_open": "on", "rubric": season.rubric, "rubric_config": "{}",
            "code_public_after_end": "on", "max_submissions_per_hour": "", "max_submissions_per_day": "",
            "dataset_weight_rule": season.dataset_weight_rule, "dataset_weight_settings": "{}",
            "second_judging": season.second_judging}
    data.update(changes)
    return data


def test_the_admin_shows_the_rules_error_in_the_organizers_language_and_applies_a_valid_change(db, client):
    from django.contrib.auth import get_user_model

    from submissions.models import Season
    from submissions.services.standings import rerank

    season = Season.objects.create(code="SX", name="ranking", ranking_rule="accepted_count")
    ids = materialize(season, CRAFTED)
    rerank(season)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456789"))
    url = f"/admin/submissions/season/{season.pk}/change/"

    form = client.get(url, headers={"Accept-Language": "zh-hans"}).content.decode()
    assert ("<code>bonus_breaks_ties</code>, 默认 <code>true</code>. "
            "接受数量和基础得分都相同时，用加分区分名次；设为 false：名次并列。") in form

    refused = client.post(url, _admin_form(season, ranking_settings='{"bonus_breaks_ties": 1}'),
                          headers={"Accept-Language": "zh-hans"})
    assert refused.status_code == 200
    assert "排名设置 &#x27;bonus_breaks_ties&#x27; 必须是 true 或 false，而不是 1" in refused.content.decode()

    saved = client.post(url, _admin_form(season, ranking_settings='{"bonus_breaks_ties": false}'))
    assert saved.status_code == 302
    season.refresh_from_db()
    assert season.ranking_settings == {"bonus_breaks_ties": False}
    assert stored_ranks(season, ids) == sorted(ranks("accepted_count", CRAFTED, {"bonus_breaks_ties": False}))
