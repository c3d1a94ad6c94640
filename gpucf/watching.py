"""Following a submission until every current run is done: the API read politely (each read later than
the one before while nothing changes, at most every POLL_MAX_S; at once again after a change; as late as
a 429 asks), and a display of where each run stands: one line rewritten in place on a terminal, a plain
line for each change otherwise (a log, a CI job)."""
import shutil
import time

from gpucf import render
from gpucf.outcomes import RateLimited, Unreachable, current_runs, is_finished

POLL_FIRST_S, POLL_MAX_S, BACKOFF = 1.0, 10.0, 1.5
# Reads in a row that may fail (the site restarting, a network blip) before the watch gives up.
MAX_FAILURES, FAILURE_PAUSE_MAX_S = 6, 30.0


def signature(answer):
    """What a change is: a run's state, stage, place in the queue or verdict (not its ticking time)."""
    return tuple((r["id"], r["status"], r.get("stage"), r.get("queue_position"), r.get("runs_ahead"), r["verdict"])
                 for r in current_runs(answer))


class Display:
    """Where the runs stand, on `stream` (stderr: stdout keeps the verdict table, or the JSON)."""

    def __init__(self, stream, live):
        self.stream, self.live = stream, live
        self.shown = None

    def show(self, answer, elapsed):
        if self.live:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r" + render.clip(render.progress_line(answer, elapsed), width) + "\x1b[K")
            self.stream.flush()
        elif signature(answer) != self.shown:
            print(render.progress_line(answer, elapsed), file=self.stream, flush=True)
        self.shown = signature(answer)

    def note(self, text):
        self.clear()
        print(text, file=self.stream, flush=True)

    def clear(self):
        if self.live:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def ticking(answer, since_read_s):
    """Each unfinished run's elapsed time as of now: the API's figure plus the time since it was read."""
    return {run["id"]: run["elapsed_s"] + since_read_s for run in current_runs(answer)
            if run.get("elapsed_s") is not None}


def follow(api, submission_id, display, *, answer=None, sleep=time.sleep, clock=time.monotonic):
    """Reads the submission until every current run is done; returns its last answer."""
    answer = answer or api.submission(submission_id)
    read_at, interval, failures = clock(), POLL_FIRST_S, 0
    while not is_finished(answer):
        next_read = clock() + interval
        while True:
            display.show(answer, ticking(answer, clock() - read_at))
            left = next_read - clock()
            if left <= 0:
                break
            sleep(min(1.0, left))
        try:
            fresh = api.submission(submission_id)
        except RateLimited as exc:
            interval = max(interval, exc.retry_after_s or POLL_MAX_S)
            continue
        except Unreachable as exc:
            failures += 1
            if failures >= MAX_FAILURES:
                raise
            display.note(f"gpucf: {exc}; reading again")
            interval = min(max(interval, 1.0) * 2, FAILURE_PAUSE_MAX_S)
            continue
        changed, failures = signature(fresh) != signature(answer), 0
        answer, read_at = fresh, clock()
        interval = POLL_FIRST_S if changed else min(interval * BACKOFF, POLL_MAX_S)
    display.clear()
    return answer
