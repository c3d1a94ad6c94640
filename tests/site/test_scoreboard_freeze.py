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
