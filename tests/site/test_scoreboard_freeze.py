"""A frozen scoreboard hides later changes from the public only; organizers keep the live board."""
from django.core.management import call_command

from submissions.models import AuditEntry
from tests.judged_data import accepted_sample
from tests.page_text import shows


def board(client, path="/api/v1/seasons/S1/leaderboard"):
    body = client.get(path).json()
    return body["frozen_at"], [(r["rank"], r["contestant"], r["accepted_count"]) for r in body["rows"]]


def test_freeze_hides_later_changes_from_the_public_only(client, season, alice, bob, organizer):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    call_command("freeze_scoreboard", "S1", "--reason", "last hour")
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})

    frozen_at, rows = board(client)
    assert frozen_at is not None and rows == [(1, "Alice", 1)]
    page = client.get("/seasons/S1/leaderboard/").content.decode()
    assert "The scoreboard is frozen since" in page and not shows(page, "Bob")
    assert not shows(client.get("/").content.decode(), "Bob")

    client.force_login(organizer.user)
    frozen_at, live = board(client)
    assert frozen_at is None and live == [(1, "Bob", 2), (2, "Alice", 1)]
    assert "Organizer view: the live board" in client.get("/seasons/S1/leaderboard/").content.decode()
    client.logout()

    call_command("freeze_scoreboard", "S1", "--unfreeze")
    assert board(client) == (None, [(1, "Bob", 2), (2, "Alice", 1)])
    actions = list(AuditEntry.objects.filter(object_type="season").order_by("created_at").values_list("action", "reason"))
    assert actions == [("scoreboard.frozen", "last hour"), ("scoreboard.unfrozen", "")]


def test_leaderboard_fragment_for_live_updates(client, season, alice, organizer):
    empty = client.get("/seasons/S1/leaderboard/?fragment=1").content.decode()
    assert empty.lstrip().startswith('<div id="leaderboard-table"') and "<html" not in empty and not shows(empty, "Alice")
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    assert "Alice" in client.get("/seasons/S1/leaderboard/?fragment=1").content.decode()


def contestant_standings(client, contestant):
    """(season, rank, accepted) on the contestant's page and in its API twin."""
    page = client.get(f"/contestants/{contestant.pk}/").context["standings"]
    api = client.get(f"/api/v1/contestants/{contestant.pk}").json()["standings"]
    return ([(s.season.code, s.rank, s.accepted_count) for s in page],
            [(s["season"], s["rank"], s["accepted_count"]) for s in api])


def test_a_contestants_page_shows_the_frozen_standing_to_the_public(client, season, alice, bob, organizer):
    """The contestant page and API read the board the viewer is held to: during a freeze, their live
    standing (rank, accepted count, scores) would tell the public what the frozen board hides."""
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    call_command("freeze_scoreboard", "S1", "--reason", "last hour")
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})

    assert contestant_standings(client, alice) == ([("S1", 1, 1)], [("S1", 1, 1)])
    assert contestant_standings(client, bob) == ([], [])  # not on the board when it froze
    client.force_login(bob.user)
    assert contestant_standings(client, bob) == ([], [])  # not even to himself: the board is frozen for him too
    client.force_login(organizer.user)
    assert contestant_standings(client, alice) == ([("S1", 2, 1)], [("S1", 2, 1)])
    assert contestant_standings(client, bob) == ([("S1", 1, 2)], [("S1", 1, 2)])
    client.logout()

    call_command("freeze_scoreboard", "S1", "--unfreeze")
    assert contestant_standings(client, bob) == ([("S1", 1, 2)], [("S1", 1, 2)])
