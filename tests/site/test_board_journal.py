"""A review re-renders only the board pages it changed (submissions/board_versions.py's journal,
leaderboard/board_cache.py): a page whose rows no change since its rendering touched is served as it
is, and every page served is still exactly what a fresh rendering of the current board shows."""
import json
import random
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.cache import caches
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from submissions import board_versions
from submissions.models import Contestant, Season, Standing
from submissions.services.standings import rerank, store

ROWS = 260  # six pages of 50
SURFACES = [f"/seasons/S1/leaderboard/?page={page}" for page in range(1, 7)] + [
    "/seasons/S1/leaderboard/?page=4&fragment=1", "/", "/api/v1/seasons/S1/leaderboard",
    "/api/v1/seasons/S1/leaderboard?offset=150"]
EN = {"Accept-Language": "en-US,en;q=0.9"}


@pytest.fixture
def big_board(season, settings):
    settings.CACHES = {**settings.CACHES, "boards": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "board-journal-test"}}
    caches["boards"].clear()
    User = get_user_model()
    unusable = make_password(None)
    User.objects.bulk_create([User(username=f"racer{i}", password=unusable) for i in range(ROWS)])
    users = User.objects.filter(username__startswith="racer").order_by("pk")
    Contestant.objects.bulk_create([Contestant(user=u, display_name=f"Racer {i:03d}") for i, u in enumerate(users)])
    rng = random.Random(5)
    Standing.objects.bulk_create([
        Standing(season=season, contestant=c, submission_count=1, accepted_count=rng.randrange(0, 6),
                 base_score=float(rng.randrange(0, 40))) for c in Contestant.objects.filter(display_name__startswith="Racer")])
    rerank(season)
    yield season
    caches["boards"].clear()


def review_of(season, standing_id, **values):
    """As the standings service changes a row in a review: the season's lock first, then the row."""
    with transaction.atomic():
        board_versions.bump(season.pk, changes={})
        store(season, Standing.objects.select_for_update().get(pk=standing_id), values)


@pytest.fixture
def review():
    return review_of


def served(client, path):
    response = client.get(path, headers=EN)
    assert response.status_code == 200, response.content[:300]
    return response.content


def standing_reads(client, path):
    with CaptureQueriesContext(connection) as queries:
        served(client, path)
    return [q["sql"] for q in queries if "submissions_standing" in q["sql"]]


def fresh(client, path):
    caches["boards"].clear()
    return served(client, path)


def ranked(season):
    return list(Standing.objects.filter(season=season).order_by("board_key", "contestant_id").values_list("pk", flat=True))


def test_a_review_renders_again_the_pages_between_the_old_place_and_the_new_and_no_other(client, big_board, review):
    season = big_board
    order = ranked(season)
    for path in (*SURFACES, "/api/v1/seasons/S1/leaderboard?offset=250"):
        served(client, path)
    mover = order[175]  # on page 4: raised to the top, it moves every row of pages 1 to 4 down one place
    review(season, mover, accepted_count=99)
    for page in (5, 6):
        assert not standing_reads(client, f"/seasons/S1/leaderboard/?page={page}"), page
    assert not standing_reads(client, "/api/v1/seasons/S1/leaderboard?offset=250")  # rows the move never touched
    for path in ("/seasons/S1/leaderboard/?page=2", "/seasons/S1/leaderboard/?page=4&fragment=1", "/"):
        assert standing_reads(client, path), path
    top = client.get("/api/v1/seasons/S1/leaderboard?limit=1").json()["rows"][0]
    assert (top["rank"], top["contestant"]) == (1, Standing.objects.get(pk=mover).contestant.display_name)


def test_every_page_served_after_random_reviews_is_what_a_fresh_rendering_shows(client, big_board, review):
    season = big_board
    rng = random.Random(11)
    ids = ranked(season)
    stamped = 0
    for step in range(12):
        for path in SURFACES:
            served(client, path)
        review(season, rng.choice(ids), accepted_count=rng.randrange(0, 8), base_score=float(rng.randrange(0, 40)))
        cached = {}
        for path in SURFACES:
            stamped += not standing_reads(client, path)
            cached[path] = served(client, path)
        for path in SURFACES:
            assert cached[path] == fresh(client, path), (step, path)
    assert stamped > 0  # some pages were served as they were


def test_a_change_of_anything_else_renders_every_page_again(client, big_board):
    for path in SURFACES:
        served(client, path)
    racer = Contestant.objects.get(display_name="Racer 007")
    racer.display_name = "Racer Seven"
    racer.save()  # a name may be on any page
    for path in SURFACES[:6] + ["/"]:  # (a page's table and JSON would share its rows, read once per version)
        assert standing_reads(client, path), path
    assert b"Racer Seven" in served(client, "/api/v1/seasons/S1/leaderboard?limit=500")


def test_a_review_adds_its_entries_after_the_last_committed_one_and_a_rollback_adds_none(big_board, review):
    season = big_board
    before = json.loads(Season.objects.get(pk=season.pk).board_changes)
    order = ranked(season)
    review(season, order[10], accepted_count=50)
    entries = json.loads(Season.objects.get(pk=season.pk).board_changes)
    lock, moved = entries[-2:]  # the season's lock (nothing changed yet), then the standing's move
    assert entries[:-2] == before[-(board_versions.KEPT_CHANGES - 2):]
    assert lock[1] == {} and list(moved[1]) == [board_versions.LIVE] and len(moved[1][board_versions.LIVE]) == 1
    assert moved[0] == Season.objects.get(pk=season.pk).board_version

    with pytest.raises(RuntimeError), transaction.atomic():
        board_versions.bump(season.pk, changes={})
        store(season, Standing.objects.select_for_update().get(pk=order[20]), {"accepted_count": 60})
        raise RuntimeError("rolled back")
    assert json.loads(Season.objects.get(pk=season.pk).board_changes) == entries
    review(season, order[30], accepted_count=70)  # the next review's entries follow the last committed one
    assert json.loads(Season.objects.get(pk=season.pk).board_changes)[:-2] == entries[-(board_versions.KEPT_CHANGES - 2):]


def test_the_journal_keeps_its_latest_entries_and_restarts_where_it_lost_track(big_board, review):
    season = big_board
    order = ranked(season)
    for i in range(board_versions.KEPT_CHANGES + 3):
        review(season, order[i], accepted_count=40 + i)
    season.refresh_from_db()
    assert len(board_versions.journal(season)) == board_versions.KEPT_CHANGES
    assert board_versions.journal(season)[-1][0] == season.board_version

    season.name = "Renamed"
    season.save()  # anything may change
    season.refresh_from_db()
    assert board_versions.journal(season) == [(season.board_version, None)]

    # a version written without its journal entry: the journal no longer describes the season
    Season.objects.filter(pk=season.pk).update(board_version="0123456789abcdef")
    season.refresh_from_db()
    assert board_versions.journal(season) == []
    review(season, order[0], accepted_count=3)  # it starts again from "anything"
    season.refresh_from_db()
    journal = board_versions.journal(season)
    assert [changes is None for _, changes in journal] == [True, False] and journal[-1][0] == season.board_version


def test_a_gpu_board_change_leaves_the_seasons_board_as_it_is(client, big_board):
    from submissions.models import GpuStanding, GpuType

    season = big_board
    cpu = GpuType.objects.get(slug="cpu")
    racer = Standing.objects.filter(season=season).first()
    row = GpuStanding.objects.create(season=season, gpu_type=cpu, contestant=racer.contestant)
    for path in ("/seasons/S1/leaderboard/?page=3", "/seasons/S1/gpus/cpu/"):
        served(client, path)
    with transaction.atomic():
        row.passed_count = 3
        row.save()
    assert not standing_reads(client, "/seasons/S1/leaderboard/?page=3")
    with CaptureQueriesContext(connection) as queries:
        served(client, "/seasons/S1/gpus/cpu/")
    assert any("submissions_gpustanding" in q["sql"] for q in queries)


def test_a_rendering_is_never_stamped_past_its_lifetime(client, big_board, settings, review):
    settings.BOARD_CACHE_SECONDS = 1.5
    season = big_board
    order = ranked(season)
    path = "/seasons/S1/leaderboard/?page=6"
    served(client, path)
    time.sleep(0.8)
    review(season, order[3], accepted_count=77)  # the top of the board: page 6 is the same
    assert not standing_reads(client, path)
    time.sleep(0.9)  # 1.7 s after its rendering: expired, though stamped at 0.8 s
    assert standing_reads(client, path)
