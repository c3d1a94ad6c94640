"""Scheduling with a real agent (`python -m profiler_agent work` under its own Redis ACL user, the site
over HTTP): fresh runs before a rejudge queued earlier, and one contestant's burst kept to its cap of
queued runs, so another contestant's later submission is judged before the rest of the burst."""
import time
import uuid

import pytest
from django.db import OperationalError

from live_platform import kernels
from submissions.bundles import build_bundle
from submissions.models import GpuType, RejudgeScope, Run, RunStatus, Season
from submissions.services import accounts, rejudging, submitting
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.django_db(transaction=True)


def wrong_bundle():
    """A quick verdict: wrong answer after the correctness trials, no timing. A new kernel each call
    (kernels.distinct): the site refuses one its contestant submitted before."""
    files = [(p.name, p.read_bytes()) for p in sorted((EXAMPLES / "relu-cpu-wrong").iterdir()) if p.is_file()]
    return build_bundle(dict(kernels.distinct(files)))


def all_done():
    try:
        return not Run.objects.exclude(status=RunStatus.DONE).exists()
    except OperationalError:  # SQLite's in-memory test database, locked while the live server writes
        return False


def wait_until_all_done(agent, timeout=600):
    """Polls the database until every run is done, then stops the agent (its heartbeats write too)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all_done():
            agent.stop()
            return
        if agent.process.poll() is not None:
            pytest.fail(f"the agent exited with {agent.process.returncode}:\n{agent.output()}")
        time.sleep(1)
    pending = list(Run.objects.exclude(status=RunStatus.DONE).values("pk", "status"))
    pytest.fail(f"runs not done after {timeout} s: {pending}\nagent output:\n{agent.output()}")


def test_a_real_agent_takes_fresh_runs_first_and_a_burst_only_up_to_its_cap(
        live_server, queue_prefix, agent_redis_users, start_agent, settings):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 1
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-123", display_name="Bob")
    organizer = accounts.register_contestant("org", "pw-org-123", display_name="Org", is_staff=True)
    agent_row, agent_token = accounts.create_agent(f"sched-{uuid.uuid4().hex[:8]}", [cpu])

    def submit(contestant, title):
        return submitting.create_submission(contestant, submitting.open_issue(season, contestant, title=title),
                                            wrong_bundle())

    old = submit(bob, "old")
    rejudge = rejudging.rejudge(RejudgeScope.SUBMISSION, old, organizer.user, "harness update")
    burst = [submit(alice, f"burst {i}") for i in range(3)]
    late = submit(bob, "late")
    assert [s.runs.get().status for s in burst] == [RunStatus.QUEUED, RunStatus.WAITING, RunStatus.WAITING]
    assert late.runs.get().status == RunStatus.WAITING  # bob's first run holds his one slot

    agent = start_agent(live_server.url, agent_token, cpu.queue_name,
                        redis_url=agent_redis_users(agent_row.name))
    wait_until_all_done(agent)

    started = list(Run.objects.order_by("started_at").values_list("pk", flat=True))
    fresh = {s.pk: s.runs.get(rejudge__isnull=True).pk for s in [old, *burst, late]}
    (rejudge_run,) = rejudge.runs.all()
    expected = [fresh[old.pk], fresh[burst[0].pk], fresh[late.pk], fresh[burst[1].pk], fresh[burst[2].pk],
                rejudge_run.pk]
    assert started == expected, agent.output()
    assert set(Run.objects.values_list("verdict", flat=True)) == {"wrong_answer"}
    assert set(Run.objects.values_list("attempts", flat=True)) == {1}
