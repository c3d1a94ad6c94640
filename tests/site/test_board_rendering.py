"""A board's rendering is done once per version, and requests never wait for it needlessly nor get an
old one (leaderboard/board_cache.py): while a version renders, other requests are served the one
before (under load the stale page is served and rendered in the background; a visitor alone waits for
their version); a part asked fresh is never an earlier version's; a queued rendering a request needs
is taken over; nothing older than the staleness bound is served. The renderings here are stand-ins
the test holds and lets go; the cache is the real one, in this process and in Redis."""
import time
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from submissions.models import Season

from leaderboard import board_cache as board_cache_module
from submissions import board_versions


class Rendering:
    """A board's rendering that takes as long as the test says: it starts, then waits to be let go."""

    def __init__(self, value):
        self.value, self.calls = value, 0
        self.started, self.go = threading.Event(), threading.Event()

    def __call__(self):
        self.calls += 1
        self.started.set()
        assert self.go.wait(30), "the test never let the rendering finish"
        return self.value


def read_season(season):
    """The season as a page reads it: from the database, marked with when (board_cache.read)."""
    return board_cache_module.read(lambda: Season.objects.get(pk=season.pk))


def ask_at_once(season, parts, count):
    """`count` requests for one board page at once, each in its own thread; their answers, and what
    they rendered themselves."""
    own = Rendering("rendered again by a follower")
    own.go.set()
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(lambda _: board_cache_module.cached(season, parts, own), range(count)))
    return answers, own.calls


PARTS = ("live", "page", "", "page", 1, "en")


def test_requests_during_a_rendering_get_the_previous_one_and_it_is_rendered_once(season, board_cache, settings):
    settings.BOARD_STALE_SECONDS = 60  # the bound is another test's: a loaded host took over 1 s between the reads
    first = Rendering("board before the review")
    first.go.set()
    assert board_cache_module.cached(read_season(season), PARTS, first) == "board before the review"
    board_versions.bump(season.pk)  # a review: the rendering above is stale

    latest = read_season(season)
    second = Rendering("board after the review")
    with ThreadPoolExecutor(1) as leader:
        rendered = leader.submit(board_cache_module.cached, latest, PARTS, second)
        assert second.started.wait(30)
        # while it renders, the other requests are served the board as it was a moment ago, rendering nothing
        with OtherRequestsInFlight():
            answers, renderings = ask_at_once(read_season(season), PARTS, 8)
        assert answers == ["board before the review"] * 8 and renderings == 0
        second.go.set()
        assert rendered.result(30) == "board after the review"
    answers, renderings = ask_at_once(read_season(season), PARTS, 8)
    assert answers == ["board after the review"] * 8 and renderings == 0
    assert first.calls == second.calls == 1


def test_a_visitor_alone_sees_every_committed_change_at_once(season, board_cache):
    for review in range(3):
        board_versions.bump(season.pk)
        rendering = Rendering(f"board after review {review}")
        rendering.go.set()
        assert board_cache_module.cached(read_season(season), PARTS, rendering) == f"board after review {review}"


class OtherRequestsInFlight:
    """Another request being answered by this process meanwhile (what RequestsInFlightMiddleware
    counts): the process is under load."""

    def __enter__(self):
        board_cache_module.request_began()  # the asking request's own
        board_cache_module.request_began()  # another one's

    def __exit__(self, *exc):
        board_cache_module.request_ended()
        board_cache_module.request_ended()


def rendered_then_reviewed(season) -> "Rendering":
    """The page rendered ("board before the review"), then made stale by a review; the rendering of
    the new version, held until its `go` is set."""
    first = Rendering("board before the review")
    first.go.set()
    board_cache_module.cached(read_season(season), PARTS, first)
    board_versions.bump(season.pk)
    return Rendering("board after the review")


def test_a_visitor_alone_waits_for_the_rendering_the_renderer_still_has_under_way(season, board_cache):
    """After a burst the renderer thread may still be rendering its pages: a request that comes alone
    is served the page at the version it read, never the previous one."""
    second = rendered_then_reviewed(season)
    with OtherRequestsInFlight():
        assert board_cache_module.cached(read_season(season), PARTS, second) == "board before the review"
        assert second.started.wait(30)  # the renderer thread took it up
    with ThreadPoolExecutor(1) as alone:
        answer = alone.submit(board_cache_module.cached, read_season(season), PARTS, lambda: "rendered again")
        time.sleep(0.2)
        done_early = answer.done()
        second.go.set()  # before asserting: the renderer thread is the process's, and the next test's too
        assert not done_early  # it waits for the rendering of its version
        assert answer.result(30) == "board after the review"
    assert second.calls == 1


def test_under_load_the_request_that_finds_a_page_stale_is_served_the_previous_one_and_it_is_rendered_in_the_background(
        season, board_cache):
    second = rendered_then_reviewed(season)
    with OtherRequestsInFlight():
        # answered at once, though the new rendering has not even been let go
        assert board_cache_module.cached(read_season(season), PARTS, second) == "board before the review"
        assert second.started.wait(30)  # the renderer thread took it up
        answers, renderings = ask_at_once(read_season(season), PARTS, 4)
        assert answers == ["board before the review"] * 4 and renderings == 0
        second.go.set()
        deadline = time.monotonic() + 30
        while board_cache_module.cached(read_season(season), PARTS, second) != "board after the review":
            assert time.monotonic() < deadline, "the background rendering never landed"
            time.sleep(0.01)
    assert second.calls == 1


def test_a_part_asked_fresh_is_never_an_earlier_versions(season, board_cache):
    """What a page kept as a version's is made of (leaderboard.views.whole_page): even under load and
    while the part is being rendered, it is that version's part, never the one before."""
    first = Rendering("part before the review")
    first.go.set()
    board_cache_module.cached(read_season(season), PARTS, first)
    board_versions.bump(season.pk)
    second = Rendering("part after the review")
    with OtherRequestsInFlight(), ThreadPoolExecutor(1) as asker:
        # the request that found it stale is served the previous part; the new one renders behind it
        assert board_cache_module.cached(read_season(season), PARTS, second) == "part before the review"
        assert second.started.wait(30)
        fresh = asker.submit(board_cache_module.cached, read_season(season), PARTS,
                             lambda: "rendered again", fresh=True)
        time.sleep(0.2)
        assert not fresh.done()  # it waits for the rendering of its version
        second.go.set()
        assert fresh.result(30) == "part after the review"


def test_a_rendering_waiting_for_the_renderer_is_taken_over_by_a_request_that_needs_it(season, board_cache, settings):
    """A page kept whole waits for its parts (fresh); were a part's rendering queued behind the page's
    on the renderer thread, the page would wait for it forever. The request that needs a queued
    rendering renders it, and the renderer then skips it."""
    settings.BOARD_STALE_SECONDS = 60  # the bound is another test's: a loaded host took over 1 s between the reads
    other_page = (*PARTS[:-2], 2, "en")
    before = Rendering("before")
    before.go.set()
    board_cache_module.cached(read_season(season), PARTS, before)
    board_cache_module.cached(read_season(season), other_page, before)
    board_versions.bump(season.pk)
    blocking, queued = Rendering("page 2 after the review"), Rendering("page 1 after the review, by the renderer")
    with OtherRequestsInFlight():
        assert board_cache_module.cached(read_season(season), other_page, blocking) == "before"
        assert blocking.started.wait(30)  # the renderer thread is busy with page 2
        assert board_cache_module.cached(read_season(season), PARTS, queued) == "before"  # queued behind it
        started = time.monotonic()
        needed = board_cache_module.cached(read_season(season), PARTS, lambda: "page 1 after the review", fresh=True)
        assert needed == "page 1 after the review" and time.monotonic() - started < board_cache_module.WAIT_SECONDS
        queued.go.set()
        blocking.go.set()
        deadline = time.monotonic() + 30
        while board_cache_module.cached(read_season(season), other_page, blocking) != "page 2 after the review":
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert queued.calls == 0 and blocking.calls == 1
    assert board_cache_module.cached(read_season(season), PARTS, before) == "page 1 after the review"


@pytest.mark.parametrize("bound", [0, 0.2])
def test_no_request_is_served_a_rendering_older_than_the_bound(season, board_cache, settings, bound):
    settings.BOARD_STALE_SECONDS = bound
    first = Rendering("board before the review")
    first.go.set()
    board_cache_module.cached(read_season(season), PARTS, first)
    time.sleep(bound + 0.1)  # nobody reads the season meanwhile: the rendering above is now too old to serve
    board_versions.bump(season.pk)

    second = Rendering("board after the review")
    with ThreadPoolExecutor(1) as leader:
        rendered = leader.submit(board_cache_module.cached, read_season(season), PARTS, second)
        assert second.started.wait(30)
        with ThreadPoolExecutor(8) as pool:  # they wait for the one rendering under way
            followers = [pool.submit(board_cache_module.cached, read_season(season), PARTS,
                                     lambda: "rendered again by a follower") for _ in range(8)]
            time.sleep(0.2)  # let them reach the wait (were they served or rendering, they would be done)
            assert not any(f.done() for f in followers)
            second.go.set()
            assert [f.result(30) for f in followers] == ["board after the review"] * 8
        assert rendered.result(30) == "board after the review"
    assert second.calls == 1
