"""Deep leaderboard pages cost what the first does: the board order within a season (board key, then
contestant) is an index, read in order with no sort, on SQLite and PostgreSQL alike (EXPLAIN of the
real database); a page's rows are fetched by id after the skipped ones were counted in that index.
Live, frozen and per-GPU boards; every page holds exactly the rows of the plain order."""
import json
import random
import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard import selectors
from leaderboard.services import freeze_scoreboard
from submissions import board_ranks
from submissions.models import Contestant, GpuStanding, Standing
from submissions.rules.ranking import GpuSpeedupRule
from submissions.services.standings import rerank

N = 1130  # 23 pages of 50, the last one short; pages past the 20th skip 1,000 rows or more


@pytest.fixture
def board(season):
    """N standings with many shared ranks (ties are ordered by contestant), and per-GPU rows."""
    rng = random.Random(5)
    users = get_user_model().objects.bulk_create([get_user_model()(username=f"u{i}") for i in range(N)])
    contestants = Contestant.objects.bulk_create(
        [Contestant(user=u, display_name=f"Contestant {i}", affiliation=f"Uni {i % 7}") for i, u in enumerate(users)])
    Standing.objects.bulk_create([
        Standing(season=season, contestant=c, accepted_count=rng.choice([0, 1, 2, 3]), base_score=rng.choice([0, 5, 10]),
                 submission_count=1, first_submission_at=timezone.now()) for c in contestants])
    rerank(season)
    gpu = season.gpu_types.get(slug="cpu")
    rows = [GpuStanding(season=season, gpu_type=gpu, contestant=c, passed_count=1,
                        geomean_speedup=rng.randrange(1, 40) / 4) for c in contestants]
    for row in rows:
        row.board_key = GpuSpeedupRule().board_key(row)
    GpuStanding.objects.bulk_create(rows)
    return season


def plan_of(query):
    """The database's plan for the ids of a deep page, as text (SQLite) or JSON nodes (PostgreSQL)."""
    sql, params = query.values_list("pk", flat=True)[1050:1100].query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the statistics a live database has
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            return " | ".join(str(row[-1]) for row in cursor.fetchall())
        # A few hundred rows sort cheaper than an index walk; ask the planner whether an index can give
        # the order at all (a full sort of the season stays possible, only costed as a last resort).
        for method in ("seqscan", "bitmapscan", "sort"):
            cursor.execute(f"SET LOCAL enable_{method} = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
        return json.dumps(plan if isinstance(plan, list) else json.loads(plan))


def assert_read_in_order_from(plan, index):
    assert index in plan, plan
    if connection.vendor == "sqlite":
        assert "TEMP B-TREE" not in plan, plan  # no sort of the season's rows, not even of the ties
    else:
        assert '"Node Type": "Sort"' not in plan and '"Node Type": "Incremental Sort"' not in plan, plan


def test_the_live_board_is_read_in_order_from_its_index(board):
    assert_read_in_order_from(plan_of(selectors.standings_query(board)), "standing_board_order")


def test_the_frozen_board_is_read_in_order_from_its_index(board, organizer):
    freeze_scoreboard(board, organizer.user)
    assert_read_in_order_from(plan_of(selectors.standings_query(board)), "frozen_standing_board_order")


def test_the_gpu_board_is_read_in_order_from_its_index(board):
    gpu = board.gpu_types.get(slug="cpu")
    assert_read_in_order_from(plan_of(selectors.gpu_standings_query(board, gpu)), "gpu_standing_board_order")


def test_the_frozen_gpu_board_is_read_in_order_from_its_index(board, organizer):
    freeze = freeze_scoreboard(board, organizer.user)
    gpu = board.gpu_types.get(slug="cpu")
    assert_read_in_order_from(plan_of(selectors.gpu_standings_query(board, gpu, freeze=freeze)), "frozen_gpu_board_order")


ROW = re.compile(r'<td class="rank">(\d+)</td>\s*<td><a href="/contestants/(\d+)/">')


def rows_shown(response):
    """(rank, contestant id) of each row of a board page, as rendered."""
    return [(int(rank), int(contestant)) for rank, contestant in ROW.findall(response.content.decode())]


def test_every_page_holds_the_rows_of_the_plain_order(client, board):
    everyone = [(s.rank, s.contestant_id) for s in board_ranks.in_order(
        Standing.objects.filter(season=board).order_by("board_key", "contestant_id"), lambda s: s.season_id)]
    assert len({rank for rank, _ in everyone}) < N / 4  # ties everywhere
    # deep down, the rows skipped are counted in the index, never read and joined with their contestants
    # (the first visit: later ones are served from the board cache)
    with CaptureQueriesContext(connection) as queries:
        client.get("/seasons/S1/leaderboard/?page=23")
    skipping = [q["sql"] for q in queries if "submissions_standing" in q["sql"] and "OFFSET" in q["sql"]]
    assert skipping and not any("submissions_contestant" in sql or "accepted_count" in sql for sql in skipping), skipping
    contestants = [q["sql"] for q in queries if 'FROM "submissions_contestant"' in q["sql"]]
    assert contestants and not any("OFFSET" in sql for sql in contestants), contestants  # the page's own, by key
    for page in (1, 2, 20, 21, 22, 23):
        assert rows_shown(client.get(f"/seasons/S1/leaderboard/?page={page}")) == everyone[(page - 1) * 50:page * 50]
        for whole_board in (False, True):  # ranks counted, or placed from the row before the page
            paginator = selectors.BoardPaginator(selectors.standings_query(board), 50)
            paginator.whole_board = whole_board
            paged = paginator.page(page).object_list
            assert [(s.rank, s.contestant_id) for s in paged] == everyone[(page - 1) * 50:page * 50]
            assert all(s.contestant.display_name for s in paged)
    api = client.get("/api/v1/seasons/S1/leaderboard?offset=1100&limit=50").json()
    assert api["total"] == N and [r["rank"] for r in api["rows"]] == [rank for rank, _ in everyone[1100:]]
    searched = [contestant for _, contestant in rows_shown(client.get("/seasons/S1/leaderboard/?q=Uni+3"))]
    assert searched and set(Contestant.objects.filter(pk__in=searched).values_list("affiliation", flat=True)) == {"Uni 3"}


def test_every_page_of_a_frozen_gpu_board_holds_the_rows_it_held_at_the_freeze(client, board, organizer):
    gpu = board.gpu_types.get(slug="cpu")
    pages = [1, 2, 21, 23]
    at_freeze = {page: rows_shown(client.get(f"/seasons/S1/gpus/cpu/?page={page}")) for page in pages}
    assert all(at_freeze.values()) and at_freeze[1][0][0] == 1
    freeze_scoreboard(board, organizer.user)
    last = GpuStanding.objects.get(season=board, gpu_type=gpu, contestant_id=at_freeze[23][-1][1])
    last.geomean_speedup, last.passed_count = 99.0, 2  # the last climbs to the top, after the freeze
    last.board_key = GpuSpeedupRule().board_key(last)
    last.save()
    for page in pages:
        assert rows_shown(client.get(f"/seasons/S1/gpus/cpu/?page={page}")) == at_freeze[page], page
    api = client.get("/api/v1/seasons/S1/gpus/cpu/leaderboard?offset=1100&limit=50").json()
    assert [(r["rank"], r["contestant"]) for r in api][-1][1] == last.contestant.display_name
