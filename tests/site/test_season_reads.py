"""A board request's season comes from one plain query (leaderboard/season_reads.py) and is reused
only while its row and its freeze's are unchanged: any change, even one written without the ORM's
signals, is in the next request's season."""
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import season_reads
from leaderboard.models import ScoreboardFreeze
from submissions.models import Season


def test_an_unchanged_season_costs_one_query_and_every_change_is_read_at_once(season, organizer):
    first = season_reads.season_with_freeze("S1")
    with CaptureQueriesContext(connection) as queries:
        again = season_reads.season_with_freeze("S1")
    assert len(queries) == 1 and again.name == first.name and again is not first
    again.name = "changed on the copy only"
    assert season_reads.season_with_freeze("S1").name == first.name

    Season.objects.filter(pk=season.pk).update(name="Renamed")  # no signal, no new board version
    assert season_reads.season_with_freeze("S1").name == "Renamed"

    ScoreboardFreeze.objects.create(season=season, frozen_by=organizer.user)
    read = season_reads.season_with_freeze("S1")
    assert read.scoreboard_freeze.season_id == season.pk
    with CaptureQueriesContext(connection) as queries:
        assert read.scoreboard_freeze is not None  # read with the season, not asked again
    assert not queries
    ScoreboardFreeze.objects.filter(season=season).delete()
    assert not hasattr(season_reads.season_with_freeze("S1"), "scoreboard_freeze")


def test_a_season_that_is_not_there_is_none(season):
    assert season_reads.season_with_freeze("NOPE") is None
    season_reads.season_with_freeze("S1")
    Season.objects.filter(pk=season.pk).delete()
    assert season_reads.season_with_freeze("S1") is None


def test_a_season_read_is_marked_for_the_board_cache(season):
    assert season_reads.season_with_freeze("S1").board_read_at is not None
