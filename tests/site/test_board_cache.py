"""The boards are served from a cache (leaderboard/board_cache.py) and are never stale: an agent's
report, a review, a new submission, a renamed contestant, a new ranking rule and a freeze show on
every board at once (the pages, the table the page polls, the JSON API, the home page, the GPU
boards, in both languages), with the cache in each process or in Redis. The personal parts of a page
(who is logged in, the CSRF token, the organizers' live board during a freeze) are never served to
another visitor, and an unreachable cache only costs the rendering."""
import html
import re
from datetime import timedelta

from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from submissions.models import GpuType, Season

from leaderboard import board_cache as board_cache_module
from submissions.services import accounts, reviewing, seasons, submitting
from live_platform.ports import free_port
from tests.judged_data import accepted_sample
from tests.page_text import shows
from tests.site.board_caches import EN, ZH, board_keys
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit

PAGES = {"leaderboard": "/seasons/S1/leaderboard/", "table fragment": "/seasons/S1/leaderboard/?fragment=1",
         "home": "/", "cpu board": "/seasons/S1/gpus/cpu/"}
APIS = {"JSON": "/api/v1/seasons/S1/leaderboard", "cpu JSON": "/api/v1/seasons/S1/gpus/cpu/leaderboard"}
STANDINGS_TABLES = ("submissions_standing", "submissions_gpustanding", "leaderboard_frozenstanding",
                    "leaderboard_frozengpustanding")


def text(response):
    assert response.status_code == 200, response.content[:500]
    return html.unescape(response.content.decode())


def boards(client):
    """What every board shows, in English and in Chinese: {(surface, language): text}."""
    shown = {}
    for language, headers in (("en", EN), ("zh", ZH)):
        for name, path in {**PAGES, **APIS}.items():
            shown[name, language] = text(client.get(path, headers=headers))
    return shown


def assert_served_from_cache(client):
    """A second visit reads no standings at all: the boards above really come from the cache."""
    for path in (*PAGES.values(), *APIS.values()):
        with CaptureQueriesContext(connection) as queries:
            text(client.get(path, headers=ZH))
        assert not [q["sql"] for q in queries if any(table in q["sql"] for table in STANDINGS_TABLES)], path


def row_of(name, page):
    """The table row of the contestant named `name` on an HTML board, as text."""
    match = re.search(rf"<tr>((?:(?!</tr>).)*>{re.escape(name)}</a>(?:(?!</tr>).)*)</tr>", page, re.S)
    return re.sub(r"<[^>]+>|\s+", " ", match.group(1)).split() if match else None


def test_every_change_to_a_board_shows_at_once_wherever_it_is_cached(
        client, season, alice, bob, organizer, agent_and_token, django_capture_on_commit_callbacks, board_cache):
    agent, _ = agent_and_token
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    shown = boards(client)
    assert all("Alice" in page and not shows(page, "Bob") for page in shown.values())
    assert_served_from_cache(client)

    # a new submission gives Bob a row on the season's board (none on the GPU board yet)
    submission = submit(django_capture_on_commit_callbacks, bob, submitting.open_issue(season, bob, title="GELU"),
                        valid_files())
    shown = boards(client)
    for language in ("en", "zh"):
        for surface in ("leaderboard", "table fragment", "home", "JSON"):
            assert "Bob" in shown[surface, language], (surface, language)
        assert not shows(shown["cpu board", language], "Bob") and not shows(shown["cpu JSON", language], "Bob")
    assert row_of("Bob", shown["leaderboard", "en"])[-1] == "—"  # no speedup yet
    assert_served_from_cache(client)

    # the agent's report: no public figure while the submission awaits review
    report_all(submission, agent, passed_result(speedup=4.5))
    shown = boards(client)
    for language in ("en", "zh"):
        for surface in ("leaderboard", "table fragment", "home"):
            assert row_of("Bob", shown[surface, language])[-1] == "—", (surface, language)
    bob_json = next(r for r in client.get(APIS["JSON"]).json()["rows"] if r["contestant"] == "Bob")
    assert bob_json["best_speedup"] is None and bob_json["accepted_count"] == 0

    # the review accepting it: Bob on the GPU board, his accepted count on the season's
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: judged on the CPU only")
    shown = boards(client)
    for language in ("en", "zh"):
        assert "Bob" in shown["cpu board", language] and "Bob" in shown["cpu JSON", language]
        for surface in ("leaderboard", "table fragment", "home"):  # Bob's best speedup, now accepted
            assert row_of("Bob", shown[surface, language])[-1] == "4.50×", (surface, language)
    assert sorted((r["contestant"], r["accepted_count"]) for r in client.get(APIS["JSON"]).json()["rows"]) == [
        ("Alice", 1), ("Bob", 1)]
    assert [r["contestant"] for r in client.get(APIS["cpu JSON"]).json()] == ["Bob", "Alice"]  # the faster first

    # a renamed contestant, on every board they are in
    accounts.update_profile(bob, display_name="Robert", affiliation="Uni Z")
    shown = boards(client)
    assert all("Robert" in page and not shows(page, "Bob") for page in shown.values())
    assert "Uni Z" in shown["leaderboard", "zh"]

    # another ranking rule: other columns, at once
    assert "First submission" not in shown["leaderboard", "en"]
    seasons.change_ranking(season, "cumulative_score", reason="seed 000's rule")
    shown = boards(client)
    for surface in ("leaderboard", "table fragment", "home"):
        assert "First submission" in shown[surface, "en"] and "首次提交" in shown[surface, "zh"], surface
    assert client.get(APIS["JSON"]).json()["ranking_rule"] == "cumulative_score"

    # a freeze, then later results, then the thaw
    call_command("freeze_scoreboard", "S1")
    boards(client)
    assert_served_from_cache(client)  # the snapshots' renderings too
    accounts.update_profile(alice, display_name="Alicia")
    assert "Alicia" in text(client.get(PAGES["leaderboard"]))  # the snapshot shows today's names
    call_command("freeze_scoreboard", "S1", "--unfreeze")
    assert "frozen" not in text(client.get(PAGES["leaderboard"]))


def test_the_boards_links_to_gpu_types_follow_every_change_at_once(client, season, alice, organizer, board_cache):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})

    def links():
        page = text(client.get(PAGES["leaderboard"]))
        return re.findall(r'<a class="tag" href="/seasons/S1/gpus/[^/]+/">([^<]+)</a>', page)

    assert links() == ["MetaX C500", "CPU"]
    cpu, c500 = GpuType.objects.get(slug="cpu"), GpuType.objects.get(slug="c500")
    cpu.name = "x86 CPU"
    cpu.save()
    assert links() == ["MetaX C500", "x86 CPU"]
    season.gpu_types.remove(c500)
    assert links() == ["x86 CPU"]
    c500.seasons.add(season)  # from the GPU type's side
    assert links() == ["MetaX C500", "x86 CPU"]
    c500.seasons.clear()
    assert links() == ["x86 CPU"]
    season.gpu_types.add(GpuType.objects.create(slug="h100", name="H100"))
    assert links() == ["x86 CPU", "H100"]  # by slug
    GpuType.objects.get(slug="h100").delete()
    assert links() == ["x86 CPU"]


def test_each_language_gets_its_own_rendering(client, season, alice, organizer, board_cache):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    for first, then in ((ZH, EN), (EN, ZH)):
        board_cache.empty()
        for headers in (first, then, first):
            for path in PAGES.values():
                page = text(client.get(path, headers=headers))
                assert ("排名" in page) == (headers is ZH) and ("Rank" in page) == (headers is EN), path


def csrf_token_of(page):
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    return found and found.group(1)


def test_personal_parts_are_never_served_to_another_visitor(season, alice, bob, organizer, board_cache):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    call_command("freeze_scoreboard", "S1")
    for _ in range(2):  # live only: the public sees Alice alone, the organizers Bob first
        accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})
    visitors = {"organizer": Client(enforce_csrf_checks=True), "alice": Client(enforce_csrf_checks=True),
                "anonymous": Client(enforce_csrf_checks=True)}
    visitors["organizer"].force_login(organizer.user)
    visitors["alice"].force_login(alice.user)
    # each visitor in turn first, so the others are served what the first one's visit cached
    for order in (("organizer", "anonymous", "alice"), ("anonymous", "alice", "organizer"),
                  ("alice", "organizer", "anonymous")):
        board_cache.empty()
        for name in order:
            client = visitors[name]
            for path in PAGES.values():
                page = text(client.get(path))
                assert ("Bob" in page) == (name == "organizer"), (name, path)  # the GPU board is frozen too
                if path != PAGES["table fragment"]:
                    assert (">organizer</a>" in page) == (name == "organizer"), (name, path)
                    assert (">alice</a>" in page) == (name == "alice"), (name, path)
                    assert ("Log in" in page) == (name == "anonymous"), (name, path)
                    # a page's CSRF token (the log-out form's) is its visitor's own: a form posted with
                    # it is accepted; a visitor who is not logged in is given none (and no CSRF cookie)
                    token = csrf_token_of(page)
                    assert (token is None) == (name == "anonymous"), (name, path)
                    if token is not None:
                        tried = client.post("/accounts/login/", {"username": "nobody", "password": "wrong",
                                                                 "csrfmiddlewaretoken": token})
                        assert tried.status_code == 200, (name, path)  # refused by the form, not by CSRF (403)
                    else:
                        assert "csrftoken" not in client.cookies, path
                    # the language switch is a display preference: it takes no token
                    switched = client.post("/i18n/setlang/", {"language": "en", "next": "/"})
                    assert switched.status_code == 302, (name, path)
            board = client.get(APIS["JSON"]).json()
            assert [r["contestant"] for r in board["rows"]] == (
                ["Bob", "Alice"] if name == "organizer" else ["Alice"]), name
            assert (board["frozen_at"] is None) == (name == "organizer"), name


def test_an_unreachable_cache_only_costs_the_rendering(client, season, alice, organizer, settings, caplog, monkeypatch):
    monkeypatch.setattr(board_cache_module, "_warned_at", [0.0])  # said once a minute: this test's own minute
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    settings.CACHES = {**settings.CACHES, "boards": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    for path in (*PAGES.values(), *APIS.values()):
        assert "Alice" in text(client.get(path)), path
    assert "the board cache is unreachable" in caplog.text


def test_whole_pages_kept_for_visitors_show_every_change_at_once(client, season, alice, bob, organizer, board_cache):
    """The page a visitor who is not logged in is served whole from the cache follows each change, in
    each language, at each address; a tracking tag in the address is not kept."""
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    for headers in (EN, ZH):
        for path in ("/seasons/S1/leaderboard/", "/seasons/S1/leaderboard/?page=1"):
            assert "Bob" not in text(client.get(path, headers=headers))
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})
    for headers in (EN, ZH):
        for path in ("/seasons/S1/leaderboard/", "/seasons/S1/leaderboard/?page=1"):
            page = text(client.get(path, headers=headers))
            assert "Bob" in page and "Alice" in page, (path, headers)
            assert ("排名" in page) == (headers is ZH) and ("Rank" in page) == (headers is EN), path
        searched = text(client.get("/seasons/S1/leaderboard/?q=Bob", headers=headers))  # another address
        assert "Bob" in searched and "Alice" not in searched
    before = len(board_keys(board_cache))
    text(client.get("/seasons/S1/leaderboard/?utm_source=mail"))
    assert len(board_keys(board_cache)) == before


def test_the_home_page_kept_for_visitors_follows_the_seasons_it_lists(client, season, board_cache):
    """The home page is kept whole for visitors too; what it shows of the seasons is part of what it is
    kept under, so a season renamed or a season added shows at once though no board changed."""
    assert "S1 · Season one" in text(client.get("/", headers=EN))
    Season.objects.filter(pk=season.pk).update(name="The first season")
    assert "S1 · The first season" in text(client.get("/", headers=EN))
    Season.objects.create(code="S2", name="Season two", starts_at=season.starts_at + timedelta(days=1))
    page = text(client.get("/", headers=EN))
    assert "S2 · Season two" in page and "S1 · The first season" in page
    with CaptureQueriesContext(connection) as queries:  # kept: the seasons listed, the current one's row
        assert text(client.get("/", headers=EN)) == page
    assert len(queries) == 2, [q["sql"] for q in queries]


def test_renderings_of_the_same_rows_at_one_version_read_them_once(client, season, alice, organizer, board_cache):
    """The page, the table it polls and the JSON of the same offset show the same rows: after a change
    the first of them reads the rows, the others are rendered from what it read."""
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    for path in ("/seasons/S1/leaderboard/?fragment=1", "/api/v1/seasons/S1/leaderboard"):
        assert "Alice" in text(client.get(path, headers=EN))
    with CaptureQueriesContext(connection) as queries:
        assert "Alice" in text(client.get("/seasons/S1/leaderboard/", headers=ZH))  # a rendering of its own
    assert not [q["sql"] for q in queries if "submissions_standing" in q["sql"]]
    accepted_sample(season, alice, organizer, {"cpu": (4.0, 1.0)})  # a new version: read once again
    with CaptureQueriesContext(connection) as queries:
        text(client.get("/seasons/S1/leaderboard/?fragment=1", headers=EN))
    assert [q["sql"] for q in queries if "submissions_standing" in q["sql"]]
