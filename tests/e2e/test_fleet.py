"""The fleet with real parts: the site over HTTP (live_server), the real Redis under the host's ACL user,
`python -m profiler_agent fleet` running two real CPU workers on one host, and a worker of an older
harness release. Every run records the worker that judged it; a drained worker takes no run while
its sibling takes them all; an outdated worker is refused and an up-to-date one judges the run.

The first two runs are the examples (a compiled extension that passes, a wrong answer), one on each
worker; the runs that only show which worker took them, and the outdated worker's run, are of
bench/fixtures/bundles/dispatch-cpu (pure torch on a 256 x 256 input: a judging costs half the CPU of
the example's 4096 x 1024 ReLU, and the question is who judges, not what)."""
import os
import signal
import subprocess
import sys
import time

import pytest
import requests
from django.db import OperationalError
from django.utils import timezone

import profiler_agent
from submissions import queueing
from submissions.models import AgentWorker, AuditEntry, Run, Season
from submissions.services import fleet
from tests.conftest import ROOT
from tests.e2e.test_judging_end_to_end import bundle_files, contest  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)
CHEAP = ROOT / "bench" / "fixtures" / "bundles" / "dispatch-cpu"  # the cheapest judging that passes


class HostProcess:
    """A real agent-host command (`fleet`, or `work` of an older release); stopped with SIGTERM."""

    def __init__(self, argv, site, contest, log_path):
        env = {**os.environ, "PROFILER_AGENT_SITE": site, "PROFILER_AGENT_TOKEN": contest["agent_token"],
               "REDIS_URL": contest["redis_url"]}
        self.log_path, self.log = log_path, open(log_path, "wb")
        self.process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def output(self, tail=8000):
        if not self.log.closed:
            self.log.flush()
        text = self.log_path.read_text(errors="replace")
        return text[-tail:] if tail else text

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
        return self.process.returncode


@pytest.fixture(autouse=True)
def no_sweeping_of_slow_judgings(settings):
    """On a loaded test machine a CPU judging can outlast the sweeper's grace (60 s), and a run still
    being judged was seen requeued by it; that is recovery's business, not the fleet's: keep it out."""
    settings.RUN_REQUEUE_AFTER_SECONDS = 3600


@pytest.fixture
def host(tmp_path):
    started = []

    def start(argv, site, contest):
        process = HostProcess(argv, site, contest, tmp_path / f"host-{len(started)}.log")
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


def work_args(contest, name):
    return ["--queue", contest["queue"], "--heartbeat-seconds", "1", "--timeout", "240", "--name", name]


def db(query, tries=50):
    """A database call from the test while the live server's threads write: in-memory SQLite (shared
    cache) answers "table is locked" instead of waiting, so wait here. PostgreSQL never needs it."""
    for attempt in range(tries):
        try:
            return query()
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(0.1)


def submit(site, contest, example=CHEAP):
    """A submission through the API (again after a 500: see `db`; a failed request stored nothing). Each a
    kernel of its own (kernels.distinct: one build for all). `example`: a folder of examples/ by name, or a
    bundle's folder."""
    files = bundle_files(example)
    for _ in range(10):
        response = requests.post(f"{site}/api/v1/submissions", data={"issue": contest["issue"].code},
                                 files=files, headers={"Authorization": f"Bearer {contest['token']}"}, timeout=30)
        if response.status_code != 500:
            break
        time.sleep(0.2)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def wait_until(condition, what, process, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process.process.poll() is not None:
            pytest.fail(f"the host process exited with {process.process.returncode} before {what}:\n{process.output()}")
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}:\n{process.output()}")


def rq_workers(queue_name):
    """The names of the RQ workers listening on the queue (read from Redis, not the database): their
    records `rq:worker:<host's Redis user>:<name>` (agents register in no shared worker set)."""
    connection, names = queueing.connection(), set()
    for key in connection.scan_iter("rq:worker:*", count=1000):
        key = key.decode()
        if key.endswith(":executions") or connection.type(key) != b"hash":
            continue
        record = {k.decode(): v.decode() for k, v in connection.hgetall(key).items()}
        if "death" not in record and queue_name in record.get("queues", "").split(","):
            names.add(key.rsplit(":", 1)[1])
    return names


def judged(site, contest, submission_ids):
    for submission_id in submission_ids:
        response = requests.get(f"{site}/api/v1/submissions/{submission_id}", timeout=10,
                                headers={"Authorization": f"Bearer {contest['token']}"})
        if response.status_code != 200:  # a 500 of in-memory SQLite (see `db`): ask again
            return False
        runs = response.json()["runs"]
        if not runs or any(r["status"] != "done" for r in runs):
            return False
    return True


def runs_of(submission_ids):
    return db(lambda: list(Run.objects.select_related("worker").filter(submission_id__in=submission_ids)
                           .order_by("submission_id")))


def heard_from_since(name, moment):
    return db(lambda: AgentWorker.objects.filter(name=name, last_heartbeat_at__gt=moment).exists())


def test_a_fleet_of_two_cpu_workers_judges_and_a_drained_worker_takes_no_runs(live_server, contest, host):
    site = live_server.url
    argv = [sys.executable, "-m", "profiler_agent", "fleet", "--cpu-workers", "2",
            *work_args(contest, "e2e-agent")]
    fleet_process = host(argv, site, contest)
    names = {"e2e-agent-cpu0", "e2e-agent-cpu1"}
    wait_until(lambda: rq_workers(contest["queue"]) == names, "both workers listening", fleet_process)

    first = [submit(site, contest, example) for example in ("relu-cpu", "relu-cpu-wrong")]
    wait_until(lambda: judged(site, contest, first), "the first two verdicts", fleet_process)
    runs = runs_of(first)
    assert [r.verdict for r in runs] == ["passed", "wrong_answer"]
    assert {r.worker.name for r in runs} == names  # both workers judged; each run names its own
    workers = db(lambda: {w.name: w for w in AgentWorker.objects.select_related("agent").filter(name__in=names)})
    for worker in workers.values():
        assert worker.agent.name == contest["agent_name"] and worker.harness_version == profiler_agent.HARNESS_VERSION
        assert (worker.gpu_uuid, worker.gpu_index, worker.last_heartbeat_at is not None) == ("", None, True)

    cpu0, cpu1 = workers["e2e-agent-cpu0"], workers["e2e-agent-cpu1"]
    db(lambda: fleet.drain_worker(cpu0, actor_label="test", reason="maintenance"))
    moment = timezone.now()
    wait_until(lambda: heard_from_since(cpu0.name, moment), "cpu0 hearing of its drain", fleet_process)
    later = [submit(site, contest) for _ in range(2)]
    wait_until(lambda: judged(site, contest, later), "the verdicts while cpu0 drains", fleet_process)
    assert [r.worker.name for r in runs_of(later)] == [cpu1.name] * 2
    assert not db(lambda: Run.objects.filter(worker=cpu0, started_at__gt=moment).exists())

    db(lambda: fleet.resume_worker(cpu0, actor_label="test"))
    db(lambda: fleet.drain_worker(cpu1, actor_label="test"))
    moment = timezone.now()
    wait_until(lambda: heard_from_since(cpu0.name, moment) and heard_from_since(cpu1.name, moment),
               "both workers hearing of the swap", fleet_process)
    resumed = [submit(site, contest)]
    wait_until(lambda: judged(site, contest, resumed), "the verdict after resuming cpu0", fleet_process)
    assert [r.worker.name for r in runs_of(resumed)] == [cpu0.name]

    assert fleet_process.stop() == 0  # SIGTERM: every worker stopped, then the fleet
    assert "stopping 2 worker(s)" in fleet_process.output()
    assert db(lambda: AuditEntry.objects.filter(action__in=["worker.drained", "worker.resumed"]).count()) == 3


def test_an_outdated_worker_is_refused_and_an_up_to_date_one_judges_the_run(live_server, contest, host, settings):
    settings.FLEET_REFUSAL_PAUSE_SECONDS = 2
    Season.objects.filter(code="S1").update(min_harness_version=profiler_agent.HARNESS_VERSION)
    site = live_server.url
    # An older release of the agent: the same code with an older harness version.
    old_release = ("import sys, profiler_agent; profiler_agent.HARNESS_VERSION = '0.9'; "
                   "from profiler_agent.__main__ import main; sys.exit(main(sys.argv[1:]))")
    old = host([sys.executable, "-c", old_release, "work", "--device", "cpu", *work_args(contest, "old-cpu0")],
               site, contest)
    wait_until(lambda: rq_workers(contest["queue"]) == {"old-cpu0"}, "the old worker listening", old)
    submission_id = submit(site, contest)
    (run,) = runs_of([submission_id])
    refusal = lambda: AuditEntry.objects.filter(  # noqa: E731
        action="run.start_refused", object_id=str(run.pk), reason__contains="older than season S1's minimum").exists()
    wait_until(lambda: db(refusal), "the old worker's refusal", old)

    new = host([sys.executable, "-m", "profiler_agent", "work", "--device", "cpu", *work_args(contest, "new-cpu0")],
               site, contest)
    wait_until(lambda: judged(site, contest, [submission_id]), "the up-to-date worker's verdict", new)
    (run,) = runs_of([submission_id])
    assert (run.verdict, run.worker.name, run.worker.harness_version) == ("passed", "new-cpu0",
                                                                          profiler_agent.HARNESS_VERSION)
    assert run.worker_refusals >= 1 and run.spent_attempts == 1  # handed back, never judged by the old one
    assert not db(lambda: Run.objects.filter(worker__name="old-cpu0").exists())
    old.stop()
    assert "older than season S1's minimum" in old.output(tail=None)
    assert old.output(tail=None).count("is older than the minimum of") == 1  # said once, not every heartbeat
