"""Following a submission: reads spaced out while nothing changes, at once again after a change, as late as
a 429 asks; a network blip ridden out; a line per change when stderr is no terminal. The site is a real
local HTTP server; the clock is the test's, so no test waits."""
import io

import pytest

from gpucf import watching
from gpucf.api import Api
from gpucf.outcomes import Unreachable
from tests.client.canned_site import Answer, CannedSite
from tests.client.test_exit_codes import run, submission

PATH = "/api/v1/submissions/7"


class SteppedClock:
    """Time that passes only when the code under test sleeps."""

    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self):
        return self.now


def queued(position, elapsed_s=0):
    return Answer(200, submission({**run(status="queued"), "queue_position": position, "elapsed_s": elapsed_s}))


def running(stage):
    return Answer(200, submission({**run(status="running"), "stage": stage, "elapsed_s": 1}))


DONE = Answer(200, submission(run("passed")))


@pytest.fixture
def site():
    made = []

    def start(answers):
        made.append(CannedSite({PATH: answers}))
        return made[-1]

    yield start
    for canned in made:
        canned.close()


def follow(canned, stream=None, live=False):
    clock = SteppedClock()
    stream = stream or io.StringIO()
    answer = watching.follow(Api(canned.url, "token"), 7, watching.Display(stream, live=live),
                             sleep=clock.sleep, clock=clock)
    return answer, clock, stream.getvalue()


def test_reads_are_spaced_out_while_nothing_changes_and_the_verdict_ends_the_watch(site):
    canned = site([queued(1)] * 5 + [DONE])
    answer, clock, _ = follow(canned)
    assert answer["runs"][0]["verdict"] == "passed" and len(canned.requests) == 6
    # waits of 1, 1.5, 2.25, 3.375 and 5.0625 s between the reads, ticked by the display at most every second
    assert max(clock.sleeps) <= 1.0
    assert round(clock.now, 4) == round(1 + 1.5 + 2.25 + 3.375 + 5.0625, 4)


def test_a_change_brings_the_next_read_back_to_a_second(site):
    canned = site([queued(2), queued(2), queued(2), queued(1), DONE])
    _, clock, _ = follow(canned)
    assert round(clock.now, 4) == 1 + 1.5 + 2.25 + 1  # after the queue moved, one second again


def test_the_wait_never_grows_past_the_most(site):
    canned = site([queued(1)] * 12 + [DONE])
    _, clock, _ = follow(canned)
    waits = [1.0 * watching.BACKOFF ** n for n in range(12)]
    assert round(clock.now, 3) == round(sum(min(w, watching.POLL_MAX_S) for w in waits), 3)


def test_a_429_is_waited_out_as_long_as_it_asks(site):
    canned = site([queued(1), Answer(429, {"detail": "slow down"}, {"Retry-After": "20"}), DONE])
    _, clock, _ = follow(canned)
    assert round(clock.now, 3) == 1 + 20


def test_a_blip_is_ridden_out_and_a_site_that_stays_away_ends_the_watch(site):
    canned = site([queued(1), Answer(502, b"bad gateway", content_type="text/plain"), DONE])
    stream = io.StringIO()
    answer, _, _ = follow(canned, stream)
    assert answer["runs"][0]["verdict"] == "passed"
    assert "answered a server error (502); reading again" in stream.getvalue()
    gone = site([queued(1), Answer(503, b"down", content_type="text/plain")])
    with pytest.raises(Unreachable):
        follow(gone)
    assert len(gone.requests) == 1 + watching.MAX_FAILURES


def test_without_a_terminal_each_change_is_one_plain_line(site):
    canned = site([queued(2, 5), queued(2, 6), queued(1, 7), running("compiling"), running("timing"), DONE])
    _, _, shown = follow(canned)
    assert shown.splitlines() == ["#7  cpu: queued (position 2) 0:05", "#7  cpu: queued (position 1) 0:07",
                                  "#7  cpu: running: compiling 0:01", "#7  cpu: running: timing 0:01"]
    assert "\r" not in shown and "\x1b" not in shown


def test_on_a_terminal_one_line_is_rewritten_in_place_and_cleared_at_the_end(site):
    canned = site([queued(1, 5), DONE])
    _, _, shown = follow(canned, live=True)
    assert shown.startswith("\r#7  cpu: queued (position 1) 0:05\x1b[K") and shown.endswith("\r\x1b[K")
    assert "\n" not in shown
