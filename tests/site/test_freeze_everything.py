"""A freeze freezes every public view of the season's results, not the season board alone: the per-GPU
boards (pages and JSON), the hardware comparison (page and API), the season's charts and contestants'
pages show what they showed at the freeze, each saying so, until the thaw. Contestants keep seeing
their own runs and results; organizers see live, told that the public does not."""
import html
import json
import re

import pytest
from django.test import Client

from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard
from submissions.models import Run
from submissions.rules import timing_flags
from submissions.services import clearing
from tests.judged_data import accepted_sample
from tests.page_text import shows

PAGES = {"season board": "/seasons/S1/leaderboard/", "cpu board": "/seasons/S1/gpus/cpu/",
         "c500 board": "/seasons/S1/gpus/c500/", "hardware page": "/seasons/S1/hardware/"}
APIS = {"board JSON": "/api/v1/seasons/S1/leaderboard", "cpu board JSON": "/api/v1/seasons/S1/gpus/cpu/leaderboard",
        "c500 board JSON": "/api/v1/seasons/S1/gpus/c500/leaderboard", "hardware API": "/api/v1/seasons/S1/hardware",
        "hardware comparison API": "/api/v1/seasons/S1/hardware/comparison"}
FROZEN_NOTICE = "The scoreboard is frozen since"
ORGANIZER_NOTICES = ("Organizer view: the live board. The public sees the frozen one.",
                     "Organizer view: live results. The public sees them as they were at the freeze.")
SURFACES = [*PAGES, *APIS, "charts"]
EN = {"Accept-Language": "en"}


def text(response):
    assert response.status_code == 200, response.content[:300]
    return html.unescape(response.content.decode())


def tables(page):
    """A page's tables: what it shows of the results (the rest holds the season's clock, of this second)."""
    return re.findall(r"<table.*?</table>", page, re.S)


class Shown:
    """What a public surface shows of the season's results, whether it says the board is frozen (and
    since when, where it can), and whether it names Bob."""

    def __init__(self, results, frozen_at, names_bob):
        self.results, self.frozen_at, self.names_bob = results, frozen_at, names_bob


def shown(client, surface):
    if surface in PAGES:
        page = text(client.get(PAGES[surface], headers=EN))
        return Shown(tables(page), FROZEN_NOTICE in page, shows(page, "Bob"))
    if surface == "charts":  # the season page's charts (acceptances over time, ranked speedups) as plotly draws them
        response = client.get("/seasons/S1/", headers=EN)
        figures = json.dumps(response.context["figures"], sort_keys=True, default=str)
        return Shown(figures, FROZEN_NOTICE in text(response), None)
    response = client.get(APIS[surface], headers=EN)
    assert response.status_code == 200, response.content[:300]
    answer = response.json()
    # a GPU board's answer is a list (its clients read it so): the notice rides in a header
    frozen_at = answer["frozen_at"] if isinstance(answer, dict) else response.headers.get("X-Scoreboard-Frozen-At")
    return Shown(answer, frozen_at, "Bob" in json.dumps(answer))


def surfaces(client):
    return {surface: shown(client, surface) for surface in SURFACES}


@pytest.fixture
def frozen(season, alice, organizer):
    """Alice accepted on both GPU types, then the freeze."""
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0), "c500": (1.5, 2.0)})
    return freeze_scoreboard(season, organizer.user, reason="last hour")


@pytest.mark.parametrize("surface", SURFACES)
def test_a_new_acceptance_after_the_freeze_shows_on_no_public_view_until_the_thaw(client, season, bob, organizer,
                                                                                   frozen, surface):
    before = shown(client, surface)
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 0.5), "c500": (4.0, 0.25)})
    after = shown(client, surface)
    assert after.results == before.results
    assert after.frozen_at in (True, frozen.frozen_at.isoformat())
    assert not after.names_bob

    unfreeze_scoreboard(season, organizer.user, reason="results")
    thawed = shown(client, surface)
    assert thawed.results != before.results and not thawed.frozen_at
    assert thawed.names_bob in (True, None)


def test_the_frozen_views_show_what_was_known_at_the_freeze(client, season, bob, organizer, frozen):
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 0.5), "c500": (4.0, 0.25)})
    public = surfaces(client)
    for surface in ("cpu board JSON", "c500 board JSON"):
        assert [row["contestant"] for row in public[surface].results] == ["Alice"], surface
    assert [row["contestant"] for row in public["hardware API"].results["rows"]] == ["Alice"]
    assert json.loads(public["charts"].results)["accepted"]["data"][0]["y"] == [1]  # Alice's acceptance alone


def test_organizers_see_live_told_that_the_public_sees_the_frozen_views(season, bob, organizer, frozen):
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 0.5), "c500": (4.0, 0.25)})
    staff = Client()
    staff.force_login(organizer.user)
    live = surfaces(staff)
    for surface in ("cpu board", "c500 board", "hardware page"):
        assert live[surface].names_bob and not live[surface].frozen_at, surface
        page = text(staff.get(PAGES[surface], headers=EN))
        assert any(notice in page for notice in ORGANIZER_NOTICES), surface
    assert [row["contestant"] for row in live["cpu board JSON"].results] == ["Bob", "Alice"]
    assert live["cpu board JSON"].frozen_at is None and live["hardware API"].frozen_at is None
    assert len(live["hardware API"].results["rows"]) == 2
    assert json.loads(live["charts"].results)["accepted"]["data"][0]["y"] == [1, 2]
    assert ORGANIZER_NOTICES[1] in text(staff.get("/seasons/S1/", headers=EN))


def contestant_page(client, contestant):
    """The contestant page's notices and history (its submissions, their runs and states), and its API twin."""
    page = text(client.get(f"/contestants/{contestant.pk}/", headers=EN))
    notices = " ".join(re.findall(r'<p class="message frozen-notice">.*?</p>', page, re.S))
    history = re.search(r'<table id="submissions">.*?</table>', page, re.S).group(0)
    return notices + history, client.get(f"/api/v1/contestants/{contestant.pk}").json()


def test_contestants_see_their_own_new_runs_and_results_the_public_the_frozen_ones(client, season, bob, organizer,
                                                                                   frozen):
    submission = accepted_sample(season, bob, organizer, {"cpu": (3.0, 0.5), "c500": (4.0, 0.25)})

    page, answer = contestant_page(client, bob)  # the public
    assert "3.00×" not in page and "Accepted" not in page
    assert "The scoreboard of S1 is frozen since" in page
    shown = next(s for s in answer["submissions"] if s["id"] == submission.pk)
    assert shown["runs"] == [] and shown["ranked"] == {}  # made after the freeze: no result to show yet
    assert answer["frozen"] == [{"season": "S1", "frozen_at": frozen.frozen_at.isoformat(), "view": "frozen"}]

    own = Client()
    own.force_login(bob.user)
    page, answer = contestant_page(own, bob)
    assert "3.00×" in page and "4.00×" in page and "Accepted" in page
    assert "your runs and results below are up to date" in page
    shown = next(s for s in answer["submissions"] if s["id"] == submission.pk)
    assert shown["ranked"]["cpu"]["speedup"] == 3.0 and answer["frozen"][0]["view"] == "own"
    assert answer["standings"] == []  # his standing is the board's: frozen for him too

    staff = Client()
    staff.force_login(organizer.user)
    page, answer = contestant_page(staff, bob)
    assert "3.00×" in page and "Organizer view: live results." in page
    assert answer["frozen"][0]["view"] == "live" and answer["standings"][0]["accepted_count"] == 1

    unfreeze_scoreboard(season, organizer.user, reason="results")
    page, answer = contestant_page(client, bob)
    assert "3.00×" in page and "Accepted" in page and "frozen" not in page and answer["frozen"] == []


def test_a_figure_vouched_for_after_the_freeze_stays_unranked_for_the_public(client, season, alice, organizer):
    """The freeze keeps each run as it stood (its verdict, flags, figures), not only the runs made by
    then: a provisional figure an organizer clears after the freeze ranks for the public at the thaw."""
    submission = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0), "c500": (1.5, 2.0)})
    Run.objects.filter(submission=submission, gpu_type__slug="c500").update(flags=[timing_flags.AWAITING_SECOND])
    freeze_scoreboard(season, organizer.user, reason="last hour")
    before = surfaces(client)
    assert "awaiting a second judging" in "".join(before["hardware page"].results)

    run = Run.objects.get(submission=submission, gpu_type__slug="c500")
    clearing.clear_second_judging(run.pk, organizer.user, "looked at it")
    after = surfaces(client)
    for surface in ("c500 board", "hardware page", "c500 board JSON", "hardware API", "hardware comparison API",
                    "charts"):
        assert after[surface].results == before[surface].results, surface
    assert after["hardware API"].results["rows"][0]["cells"]["c500"] is None
    page, answer = contestant_page(client, alice)
    assert "awaiting a second judging" in page and "1.50×" not in page

    unfreeze_scoreboard(season, organizer.user, reason="results")
    assert shown(client, "hardware API").results["rows"][0]["cells"]["c500"]["speedup"] == 1.5
