"""Runs that never end, with real parts: the site over HTTP (live_server), the real Redis under the host's
ACL user, a real CPU agent. A bundle whose forward never returns is taken by the agent; an organizer
cancels it through the review page's form; the run is `cancelled` at once, the agent's next heartbeat
(every 3 s while judging, though its idle interval is 10 s) tells it to stop, nothing of the judged
process is left, and the worker judges the next queued run within seconds, not the run limit (900 s).
An agent that does not know the order (one from before it, whose heartbeats ignore the field) judges to
its limit; its report is refused and kept as a late report, and the run stays cancelled."""
import os
import random
import sys
import time
from pathlib import Path

import pytest

from submissions.models import AuditEntry, Run, RunStatus, Verdict
from submissions.services import accounts
from tests.agent.processes import descendants, process_table, wait_gone
from tests.e2e.test_fleet import CHEAP, db, host, judged, runs_of, submit, wait_until  # noqa: F401 (a fixture)
from tests.e2e.test_judging_end_to_end import contest  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

# Its forward starts a daemon of its own session (killing the judged process's group misses it), which
# becomes `sleep <mark>` so the test can find it, then never returns.
NEVER_RETURNS = '''import os
import time

import torch


def daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "{mark}"])
        os._exit(0)
    os.wait()


class ModelNew(torch.nn.Module):
    def forward(self, x):
        daemon()
        while True:
            time.sleep(1)
'''


@pytest.fixture(autouse=True)
def no_sweeping_of_slow_judgings(settings):
    settings.RUN_REQUEUE_AFTER_SECONDS = 3600  # recovery's business, not this test's (tests/e2e/test_fleet.py)


@pytest.fixture
def mark():
    """The daemon's `sleep` argument: finds it among the host's processes, and kills it if a test fails."""
    value = str(7_000_000 + random.randrange(1_000_000))
    yield value
    for pid, (_, line) in process_table().items():
        if line == f"sleep {value}":
            os.kill(pid, 9)


def never_returning_bundle(tmp_path: Path, mark: str) -> Path:
    root = tmp_path / "never-returns"
    root.mkdir()
    (root / "torchcode.py").write_bytes((CHEAP / "torchcode.py").read_bytes())
    (root / "cudacode.py").write_text(NEVER_RETURNS.replace("{mark}", mark))
    return root


def forward_running(mark, process):
    """The daemon's pid once the forward runs, and the judged processes below the agent's process then."""
    found = []

    def daemon_started():
        found[:] = [pid for pid, (_, line) in process_table().items() if line == f"sleep {mark}"]
        return bool(found)

    wait_until(daemon_started, "the never-returning forward", process)
    table = process_table()
    judged_processes = [pid for pid in descendants(process.process.pid, table)
                        if "graders.judged_process" in table[pid][1]]
    assert judged_processes, "the judged process should run below the agent's process"
    return found, judged_processes


def cancel_through_the_review_page(client, run, reason):
    organizer = db(lambda: accounts.register_contestant("org", "pw-org-123", display_name="Org", is_staff=True))
    client.force_login(organizer.user)
    page = db(lambda: client.get(f"/organizer/submissions/{run.submission_id}/")).content.decode()
    assert f'id="cancel-run-{run.pk}"' in page and "Stop and cancel this run" in page
    response = db(lambda: client.post(f"/organizer/runs/{run.pk}/cancel/", {"reason": reason}))
    assert response.status_code == 302 and response["Location"] == f"/organizer/submissions/{run.submission_id}/"
    return organizer


def test_a_cancelled_run_whose_forward_never_returns_frees_its_worker_within_seconds(
        live_server, contest, host, client, tmp_path, mark, settings):
    site = live_server.url
    hanging = submit(site, contest, never_returning_bundle(tmp_path, mark))
    following = submit(site, contest)  # queued behind it
    agent = host([sys.executable, "-m", "profiler_agent", "work", "--device", "cpu", "--queue", contest["queue"],
                  "--heartbeat-seconds", "10", "--name", "e2e-stop-cpu0"], site, contest)
    daemon, judged_processes = forward_running(mark, agent)
    (run,) = runs_of([hanging])
    assert run.status == RunStatus.RUNNING and run.worker.name == "e2e-stop-cpu0"

    cancelled_at = time.monotonic()
    organizer = cancel_through_the_review_page(client, run, "its forward never returns")
    run = db(lambda: Run.objects.get(pk=run.pk))
    assert (run.status, run.verdict) == (RunStatus.DONE, Verdict.CANCELLED)  # at once, whatever the agent does

    started_next = lambda: Run.objects.filter(submission_id=following).exclude(  # noqa: E731
        status__in=[RunStatus.QUEUED, RunStatus.WAITING]).exists()
    wait_until(lambda: db(started_next), "the worker taking the next run", agent, timeout=60)
    assert time.monotonic() - cancelled_at < 20  # a heartbeat within 3 s, the judging ended at once
    assert wait_gone([*daemon, *judged_processes]) == []  # nothing of it is left, its own-session daemon neither
    wait_until(lambda: judged(site, contest, [following]), "the next run's verdict", agent, timeout=300)
    assert time.monotonic() - cancelled_at < settings.JUDGE_TIMEOUT_SECONDS / 4  # well before the run limit
    (nxt,) = runs_of([following])
    assert (nxt.verdict, nxt.worker.name) == (Verdict.PASSED, "e2e-stop-cpu0")

    run = db(lambda: Run.objects.get(pk=run.pk))
    assert (run.verdict, run.result) == (Verdict.CANCELLED, None)
    entry = db(lambda: AuditEntry.objects.get(action="run.cancelled", object_id=str(run.pk)))
    assert (entry.actor_id, entry.reason) == (organizer.user.pk, "its forward never returns")
    assert entry.before["status"] == "running" and entry.before["worker"] == "e2e-stop-cpu0"
    # the stopped agent reported nothing for the cancelled attempt
    assert not db(lambda: AuditEntry.objects.filter(action__in=["run.late_report", "run.verdict"],
                                                    object_id=str(run.pk)).exists())
    assert agent.stop() == 0
    assert f"run {run.pk} attempt 1 was cancelled; stopping its judging" in agent.output(tail=None)


def test_an_agent_that_does_not_stop_judges_to_its_limit_and_its_report_is_refused(
        live_server, contest, host, client, tmp_path, mark, settings):
    settings.JUDGE_TIMEOUT_SECONDS = 10  # the run limit the site gives: the old agent judges to it
    site = live_server.url
    hanging = submit(site, contest, never_returning_bundle(tmp_path, mark))
    # an agent from before `stop_judging`: the same code, its heartbeat deaf to the field
    old_release = ("import sys; import profiler_agent.worker.heartbeat as beat; beat.orders_in = lambda answer: []; "
                   "from profiler_agent.__main__ import main; sys.exit(main(sys.argv[1:]))")
    old = host([sys.executable, "-c", old_release, "work", "--device", "cpu", "--queue", contest["queue"],
                "--heartbeat-seconds", "1", "--name", "e2e-old-cpu0"], site, contest)
    forward_running(mark, old)
    (run,) = runs_of([hanging])
    organizer = cancel_through_the_review_page(client, run, "hangs; its agent is too old to stop")
    assert db(lambda: Run.objects.get(pk=run.pk)).verdict == Verdict.CANCELLED

    late = lambda: AuditEntry.objects.filter(action="run.late_report", object_id=str(run.pk)).first()  # noqa: E731
    wait_until(lambda: db(late), "the old agent's report", old, timeout=180)
    entry = db(late)
    assert entry.actor_label.startswith("agent:") and entry.after["result"]["status"] == "timeout"
    assert "was cancelled while it was judged" in entry.reason
    run = db(lambda: Run.objects.get(pk=run.pk))
    assert (run.status, run.verdict, run.result, run.speedup) == (RunStatus.DONE, Verdict.CANCELLED, None, None)
    assert db(lambda: AuditEntry.objects.get(action="run.cancelled", object_id=str(run.pk))).actor_id == organizer.user.pk
    assert not db(lambda: AuditEntry.objects.filter(action="run.verdict", object_id=str(run.pk)).exists())
    assert old.stop() == 0
    assert "stopping its judging" not in old.output(tail=None)  # it never heard the order
