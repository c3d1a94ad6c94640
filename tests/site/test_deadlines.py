"""Deadlines and limits in sight. Every season page shows the season's start and end and a countdown to
whichever comes next (before its start, while it runs, once it has ended, and with no end date), the
leaderboard kept whole in the board cache included; the public API says the same, as its OpenAPI
document describes. A submission's page and JSON show the time limits its runs are judged under, and
how long a running run has been judged of the limit. Django's test client, real database and Redis."""
import re
from datetime import datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.utils import timezone

from submissions.models import Run, RunStatus, Season
from submissions.services import accounts, judging, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import submit

EN = {"Accept-Language": "en"}


class ClockReader(HTMLParser):
    """The season clock lines of a page (templates/submissions/_season_clock.html): per season, its
    data attributes, the dates' text, and the text of each phase shown (the hidden ones apart)."""

    def __init__(self):
        super().__init__()
        self.clocks, self.clock, self.part, self.depth = {}, None, None, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "p" and "season-clock" in (attrs.get("class") or "").split():
            self.clock = {**attrs, "dates": "", "shown": {}}
            self.clocks[attrs["data-season"]] = self.clock
        elif self.clock is not None and tag == "span":
            self.depth += 1
            classes = (attrs.get("class") or "").split()
            if "clock-phase" in classes and "hidden" not in attrs:
                self.part = ("shown", attrs["data-phase"], self.depth)
                self.clock["shown"][attrs["data-phase"]] = ""
            elif "season-dates" in classes:
                self.part = ("dates", None, self.depth)

    def handle_endtag(self, tag):
        if self.clock is None:
            return
        if tag == "p":
            self.clock = None
        elif tag == "span":
            if self.part and self.part[2] == self.depth:
                self.part = None
            self.depth -= 1

    def handle_data(self, data):
        if self.clock is None or self.part is None:
            return
        if self.part[0] == "dates":
            self.clock["dates"] += data
        else:
            self.clock["shown"][self.part[1]] += data


def clocks_of(response):
    assert response.status_code == 200, response.content[:300]
    reader = ClockReader()
    reader.feed(response.content.decode())
    return reader.clocks


def one_line(text):
    return " ".join(text.split())


# (start, end) from now, the phase, the text shown for it
PHASES = {
    "not started": (timedelta(days=2, hours=3, seconds=30), timedelta(days=9), "upcoming",
                    r"^Starts in 2 d 03:00:[0-3]\d$"),
    "running": (-timedelta(days=1), timedelta(hours=5, seconds=30), "running", r"^Ends in 05:00:[0-3]\d$"),
    "ended": (-timedelta(days=3), -timedelta(minutes=1), "ended", r"^Ended$"),
    "no end date": (-timedelta(days=1), None, "running", r"^In progress$"),
}


def set_dates(season, start, end):
    now = timezone.now()
    season.starts_at, season.ends_at = now + start, (now + end) if end is not None else None
    season.save()


@pytest.fixture
def season_pages(client, season, alice):
    """The pages that name the season, as a visitor and as a signed-in contestant sees them."""
    issue = submitting.open_issue(season, alice, title="ReLU")
    return {"visitor": ["/seasons/S1/", "/seasons/S1/leaderboard/", "/seasons/S1/gpus/cpu/", "/seasons/S1/hardware/",
                        f"/issues/{issue.code}/", "/issues/?season=S1", "/issues/"],
            "contestant": ["/seasons/S1/leaderboard/", "/submit/", f"/issues/{issue.code}/"]}


@pytest.mark.parametrize("state", PHASES)
def test_every_season_page_shows_its_start_end_and_the_countdown_to_what_comes_next(client, season, alice,
                                                                                      season_pages, state):
    start, end, phase, shown = PHASES[state]
    set_dates(season, start, end)
    season.refresh_from_db()
    for who, paths in season_pages.items():
        if who == "contestant":
            client.force_login(alice.user)
        for path in paths:
            clock = clocks_of(client.get(path, headers=EN))["S1"]
            where = f"{who} {path}: {clock}"
            assert clock["data-phase"] == phase, where
            assert list(clock["shown"]) == [phase], where  # the others are there for the script, hidden
            assert re.match(shown, one_line(clock["shown"][phase])), where
            dates = one_line(clock["dates"])
            # the site's time zone named beside its times, each also machine-readable for the script
            assert dates.startswith("S1 · starts ") and dates.count("(UTC)") == 1, where
            if end is None:
                assert dates.endswith("(UTC) · no end date") and " ends " not in dates, where
            else:
                assert " · ends " in dates and dates.endswith("(UTC)"), where
            page = client.get(path, headers=EN).content.decode()
            assert f'datetime="{season.starts_at.isoformat()}"' in page, where
            assert "js/season-clock.js" in page, where


@pytest.mark.parametrize("state", PHASES)
def test_the_script_gets_the_seconds_left_as_the_server_counted_them(client, season, state):
    start, end, phase, _ = PHASES[state]
    set_dates(season, start, end)
    clock = clocks_of(client.get("/seasons/S1/", headers=EN))["S1"]
    to_start, to_end = int(clock["data-to-start-s"]), clock["data-to-end-s"]
    if phase == "upcoming":
        assert 183620 <= to_start <= 183630 and 9 * 86400 - 10 <= int(to_end) <= 9 * 86400
    else:
        assert to_start == 0  # started: what it shows stays the same while nothing changes
    if end is None:
        assert to_end == ""
    elif phase == "ended":
        assert to_end == "0"
    elif phase == "running":
        assert 18020 <= int(to_end) <= 18030
    assert clock["data-days-pattern"] == "%(days)s d %(clock)s"


def test_the_leaderboard_kept_whole_for_visitors_shows_the_clock_of_the_moment(client, season):
    """A visitor's leaderboard is served whole from the board cache until the board changes; the
    season's end passing changes no board, and the page shows it at once all the same."""
    set_dates(season, -timedelta(days=1), timedelta(hours=5))
    version = Season.objects.get(pk=season.pk).board_version
    assert clocks_of(client.get("/seasons/S1/leaderboard/", headers=EN))["S1"]["data-phase"] == "running"
    # the end passes: as time would, without saving the season (no new board version)
    Season.objects.filter(pk=season.pk).update(ends_at=timezone.now() - timedelta(seconds=1))
    assert Season.objects.get(pk=season.pk).board_version == version
    clock = clocks_of(client.get("/seasons/S1/leaderboard/", headers=EN))["S1"]
    assert clock["data-phase"] == "ended" and one_line(clock["shown"]["ended"]) == "Ended"


def test_the_issue_list_shows_the_seasons_taking_submissions_or_the_one_searched(client, season):
    Season.objects.create(code="S0", name="Season zero", is_open=False,
                                   starts_at=timezone.now() - timedelta(days=90),
                                   ends_at=timezone.now() - timedelta(days=30))
    assert list(clocks_of(client.get("/issues/", headers=EN))) == ["S1"]
    searched = clocks_of(client.get("/issues/?season=S0", headers=EN))
    assert list(searched) == ["S0"] and searched["S0"]["data-phase"] == "ended"


def test_the_seasons_api_says_where_each_season_stands(client, season):
    set_dates(season, -timedelta(days=1), timedelta(hours=5))
    now = timezone.now()
    Season.objects.create(code="S2", name="Next", starts_at=now + timedelta(days=2), ends_at=now + timedelta(days=9))
    Season.objects.create(code="S0", name="Past", starts_at=now - timedelta(days=9), ends_at=now - timedelta(days=2),
                          is_open=False)
    Season.objects.create(code="S3", name="Endless", starts_at=now - timedelta(days=3))
    by_code = {s["code"]: s for s in client.get("/api/v1/seasons").json()}
    running, upcoming, ended, endless = by_code["S1"], by_code["S2"], by_code["S0"], by_code["S3"]
    assert (running["phase"], running["ended"], running["seconds_to_start"]) == ("running", False, None)
    assert 5 * 3600 - 10 <= running["seconds_left"] <= 5 * 3600
    assert datetime.fromisoformat(running["ends_at"]) == Season.objects.get(code="S1").ends_at
    assert (upcoming["phase"], upcoming["ended"]) == ("upcoming", False)
    assert 2 * 86400 - 10 <= upcoming["seconds_to_start"] <= 2 * 86400
    assert 9 * 86400 - 10 <= upcoming["seconds_left"] <= 9 * 86400
    assert (ended["phase"], ended["ended"], ended["seconds_to_start"], ended["seconds_left"]) == ("ended", True, None,
                                                                                                  None)
    assert (endless["phase"], endless["ends_at"], endless["seconds_left"]) == ("running", None, None)
    assert datetime.fromisoformat(endless["starts_at"]) == Season.objects.get(code="S3").starts_at


def test_the_openapi_document_describes_the_seasons_times_and_each_runs_time_limit(client):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    season = schemas["SeasonOut"]
    assert {"starts_at", "ends_at", "phase", "seconds_to_start", "seconds_left"} <= set(season["required"])
    assert season["properties"]["phase"]["enum"] == ["upcoming", "running", "ended"]
    for name in ("starts_at", "ends_at", "seconds_to_start", "seconds_left"):
        assert season["properties"][name]["description"], name
    run = schemas["RunOut"]
    assert "time_limit_s" in run["required"]
    assert "RUN_DEADLINE_SECONDS" in run["properties"]["time_limit_s"]["description"]
    assert set(schemas["LimitsOut"]["properties"]) == {"compile_s", "run_s", "judging_s"}


def test_a_submissions_page_and_json_show_the_time_limits_and_a_running_runs_time_of_them(
        client, season, alice, agent_and_token, settings, django_capture_on_commit_callbacks):
    settings.RUN_DEADLINE_SECONDS = 1200
    settings.JUDGE_COMPILE_TIMEOUT_SECONDS, settings.JUDGE_TIMEOUT_SECONDS = 300, 600
    agent, _ = agent_and_token
    submission = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                        valid_files())
    cpu_run, c500_run = (submission.runs.get(gpu_type__slug=slug) for slug in ("cpu", "c500"))
    judging.start_run(cpu_run.pk, agent, cpu_run.attempts)
    Run.objects.filter(pk=cpu_run.pk).update(started_at=timezone.now() - timedelta(seconds=754))

    page = client.get(f"/submissions/{submission.pk}/", headers=EN).content.decode()
    limits = re.search(r'<p class="muted" id="run-limits">(.*?)</p>', page, re.S).group(1)
    assert one_line(limits) == ("Time limits: 5:00 to compile and 10:00 to run, for each judged process; a whole "
                                "judging may take up to 20:00 from its agent's start, after which it is taken "
                                "back and judged again.")
    for html in (page, client.get(f"/submissions/{submission.pk}/runs/", headers=EN).content.decode()):
        running = re.search(rf'<tr id="run-{cpu_run.pk}">.*?</tr>', html, re.S).group(0)
        assert re.search(r'data-elapsed-s="75[4-9]"[^>]*>12:3\d</span> '
                         r'<span class="time-limit">of at most 20:00</span>', running), running
        queued = re.search(rf'<tr id="run-{c500_run.pk}">.*?</tr>', html, re.S).group(0)
        assert "time-limit" not in queued  # waiting in its queue: no judging to time yet

    _, token = accounts.create_api_token(alice)
    answer = client.get(f"/api/v1/submissions/{submission.pk}", headers={"Authorization": f"Bearer {token}"}).json()
    assert answer["limits"] == {"compile_s": 300, "run_s": 600, "judging_s": 1200}
    runs = {run["gpu_type"]: run for run in answer["runs"]}
    assert runs["cpu"]["status"] == RunStatus.RUNNING and 754 <= runs["cpu"]["elapsed_s"] <= 760
    assert runs["cpu"]["time_limit_s"] == 1200 and runs["c500"]["time_limit_s"] == 1200
