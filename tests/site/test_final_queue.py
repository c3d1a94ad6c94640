"""A final system test's runs come before everything else (docs/architecture.md, "Scheduling"): they wait
on `gpu.<type>.final`, which agents read before the fresh and rejudge queues; their second judgings
too. The hosts' Redis users may take from it, the sweep finds a lost final job there, the fleet page
counts it. A real agent worker (`python -m profiler_agent work`, under the host's Redis ACL user, against
a small real site) takes a final job queued after fresh ones first, and under the rules of a site
from before the final queue it passes over that queue and judges the rest as before. Real Redis,
database and RQ."""
import datetime
import secrets
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from rq import Queue

from profiler_agent.worker.queue_order import listen_order
from submissions import fleet_status, queueing
from submissions.bundles import build_bundle
from submissions.models import FINAL_QUEUE_SUFFIX, AgentWorker, GpuType, RejudgeScope, Run, RunStatus, Season
from submissions.services import (accounts, agent_redis, final_system_tests, recovery, rejudging, reviewing,
                                  scheduling, submitting)
from tests.agent.fake_site import FakeSite
from tests.conftest import ROOT
from tests.site.bundle_files import valid_files
from tests.site.test_scheduling import judge_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def seasons(db):
    """S1, ended, and S2, running, both judged on the CPU type alone."""
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    ended = Season.objects.create(second_judging="off", code="S1", name="Season one",
                                  ends_at=timezone.now() + datetime.timedelta(hours=1))
    running = Season.objects.create(second_judging="off", code="S2", name="Season two", max_submissions_per_hour=100,
                                    max_submissions_per_day=100)
    for season in (ended, running):
        season.gpu_types.add(cpu)
    return {"S1": ended, "S2": running, "cpu": cpu}


@pytest.fixture
def agent(seasons):
    return accounts.create_agent("final-agent", GpuType.objects.all())[0]


def submit(capture, contestant, season, title, note=""):
    with capture(execute=True):
        return submitting.create_submission(contestant, submitting.open_issue(season, contestant, title=title),
                                            build_bundle(valid_files()), note=note)


def accepted_and_ended(capture, seasons, contestant, organizer, agent):
    """A submission of S1 judged and accepted, then S1 ends."""
    accepted = submit(capture, contestant, seasons["S1"], "counted")
    while judge_next(capture, seasons["cpu"], agent):
        pass
    reviewing.review_submission(accepted, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points", acceptance_override="test data")
    Season.objects.filter(pk=seasons["S1"].pk).update(ends_at=timezone.now() - datetime.timedelta(minutes=1))
    seasons["S1"].refresh_from_db()
    return accepted


def start_final_test(capture, season, organizer):
    with capture(execute=True):
        return final_system_tests.start(season, "final system test", actor=organizer.user)


def test_the_agent_reads_the_final_queue_first_then_fresh_then_rejudges():
    gpu_type = GpuType(slug="h100", name="H100")
    expected = [gpu_type.final_queue_name, gpu_type.queue_name, gpu_type.rejudge_queue_name]
    assert listen_order([gpu_type.queue_name]) == expected == scheduling.queues_in_order(gpu_type)
    assert listen_order(expected) == expected  # applying it again changes nothing
    assert agent_redis.queue_names("h100") == expected


def test_a_final_tests_runs_queued_after_fresh_runs_and_a_rejudge_are_judged_first(
        seasons, alice, bob, organizer, agent, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = seasons["cpu"]
    counted = accepted_and_ended(capture, seasons, alice, organizer, agent)
    old = submit(capture, bob, seasons["S2"], "old")
    judge_next(capture, cpu, agent)
    with capture(execute=True):
        batch = rejudging.rejudge(RejudgeScope.SUBMISSION, old, organizer.user, "new harness")
    fresh = [submit(capture, bob, seasons["S2"], f"fresh {i}") for i in range(2)]
    test = start_final_test(capture, seasons["S1"], organizer)

    (final_run,) = test.rejudge.runs.all()
    assert final_run.final_test and final_run.submission_id == counted.pk
    assert queueing.judging_queue(cpu.final_queue_name).get_job_ids() == [final_run.rq_job_id]
    fresh_runs = [s.runs.get() for s in fresh]
    (rejudge_run,) = batch.runs.all()
    # its place counts no other queue; a fresh run's counts the final queue, a rejudge's both
    assert [scheduling.queue_position(r) for r in (final_run, *fresh_runs, rejudge_run)] == [1, 2, 3, 4]

    order = []
    while (run := judge_next(capture, cpu, agent)) is not None:
        order.append(run.pk)
    assert order == [final_run.pk, *(r.pk for r in fresh_runs), rejudge_run.pk]
    test.refresh_from_db()
    assert test.is_finished


def test_a_final_runs_second_judging_waits_on_the_final_queue_too(
        seasons, alice, organizer, agent, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = seasons["cpu"]
    accepted_and_ended(capture, seasons, alice, organizer, agent)
    Season.objects.filter(pk=seasons["S1"].pk).update(second_judging="every_passed")
    other, _ = accounts.create_agent("other-host", [cpu])
    AgentWorker.objects.create(agent=other, name="other-host-cpu0", last_heartbeat_at=timezone.now())
    test = start_final_test(capture, seasons["S1"], organizer)
    final_run = judge_next(capture, cpu, agent)
    assert final_run.final_test and "awaiting_second_judging" in final_run.flags
    confirming = Run.objects.get(confirms=final_run)
    assert confirming.final_test and confirming.status == RunStatus.QUEUED
    assert queueing.judging_queue(cpu.final_queue_name).get_job_ids() == [confirming.rq_job_id]
    assert not queueing.judging_queue(cpu.rejudge_queue_name).get_job_ids()
    assert final_system_tests.pending_runs(test).get() == confirming


def test_the_sweep_queues_a_lost_final_job_again_on_the_final_queue(
        seasons, alice, organizer, agent, settings, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = seasons["cpu"]
    accepted_and_ended(capture, seasons, alice, organizer, agent)
    (run,) = start_final_test(capture, seasons["S1"], organizer).rejudge.runs.all()
    queueing.connection().lrem(f"rq:queue:{cpu.final_queue_name}", 0, run.rq_job_id)  # lost (a Redis restart)
    Run.objects.filter(pk=run.pk).update(
        enqueued_at=timezone.now() - datetime.timedelta(seconds=settings.RUN_REQUEUE_AFTER_SECONDS + 5))
    with capture(execute=True):
        assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 2
    assert queueing.judging_queue(cpu.final_queue_name).get_job_ids() == [run.rq_job_id]


def test_the_fleet_page_counts_the_final_queue(seasons, alice, organizer, agent, client,
                                               django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    accepted_and_ended(capture, seasons, alice, organizer, agent)
    start_final_test(capture, seasons["S1"], organizer)
    (row,) = fleet_status.queues()
    assert (row.final_depth, row.fresh_depth, row.rejudge_depth) == (1, 0, 0)
    client.force_login(organizer.user)
    page = client.get("/organizer/fleet/", headers={"Accept-Language": "en"}).content.decode()
    assert "Final system test queue" in page and '<td class="num final">1</td>' in page
    (answer,) = client.get("/organizer/fleet.json").json()["queues"]
    assert (answer["final_queue"], answer["final_depth"]) == (seasons["cpu"].final_queue_name, 1)


def dry_run(user, *command):
    return queueing.connection().execute_command("ACL", "DRYRUN", user, *command)


def test_a_hosts_redis_user_may_take_from_its_final_queue_and_nothing_more(seasons, agent, agent_redis_users):
    cpu = seasons["cpu"]
    agent_redis_users("final-agent")
    user, claims = agent_redis.username_for("final-agent"), agent_redis.claim_list("final-agent")
    final_key = f"rq:queue:{cpu.final_queue_name}"
    assert dry_run(user, "LMOVE", final_key, claims, "LEFT", "RIGHT") == b"OK"
    other = GpuType(slug="c500", name="C500").final_queue_name  # a type the host is not granted
    assert b"no permissions" in dry_run(user, "LMOVE", f"rq:queue:{other}", claims, "LEFT", "RIGHT")
    assert dry_run(user, "LLEN", final_key) == b"OK"
    for command in (("RPUSH", final_key, "x"), ("LREM", final_key, "0", "x"), ("LPOP", final_key)):
        assert b"no permissions" in dry_run(user, *command), command
    assert dry_run(user, "ZADD", f"rq:wip:{cpu.final_queue_name}", "1", "x") == b"OK"  # its registries, as RQ writes


# ---- A real agent worker --------------------------------------------------------------------------


def old_site_rules(agent_name, slugs):
    """The ACL rules a site from before the final queues gave a host: today's, less every key of a
    final queue (its list and its registries)."""
    rules = []
    for rule in agent_redis.acl_rules(agent_name, slugs):
        if rule.startswith("("):
            rules.append("(" + " ".join(p for p in rule[1:-1].split() if not p.endswith(FINAL_QUEUE_SUFFIX)) + ")")
        elif not rule.endswith(FINAL_QUEUE_SUFFIX):
            rules.append(rule)
    return rules


@pytest.fixture
def host_user(seasons):
    """A host's Redis ACL user for the CPU type, made with given rules; (agent name, user's Redis URL)."""
    made = []

    def make(rules_of):
        name = f"host-{uuid.uuid4().hex[:8]}"
        user, password = agent_redis.username_for(name), secrets.token_urlsafe(16)
        queueing.connection().execute_command("ACL", "SETUSER", user, *rules_of(name, ["cpu"]), f">{password}")
        made.append(user)
        return name, agent_redis.agent_url(user, password)

    yield make
    for user in made:
        queueing.connection().execute_command("ACL", "DELUSER", user)


def run_agent_burst(site, name, redis_url, queue_name):
    """`python -m profiler_agent work --burst` until its queues are empty."""
    return subprocess.run(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", "agent-token",
         "--queue", queue_name, "--redis", redis_url, "--name", name, "--device", "cpu", "--burst",
         "--heartbeat-seconds", "1"], cwd=ROOT, capture_output=True, text=True, timeout=300)


def enqueue(queue_name, run_id):
    queueing.enqueue_judging(queue_name, queueing.job_id(run_id, 1, "cpu"), {"run_id": run_id, "attempt": 1})


def started_runs(site):
    return [int(r["path"].split("/")[-2]) for r in site.requests if r["path"].endswith("/start")]


@pytest.fixture
def site():
    """A small real site that answers every start "finished already" (409): the worker takes the job,
    asks to start it, and goes on to the next, judging nothing."""
    fake = FakeSite()
    fake.start_codes = {str(run_id): 409 for run_id in range(1, 10)}
    yield fake
    fake.close()


def test_a_real_agent_takes_a_final_job_queued_after_fresh_ones_first(seasons, site, host_user):
    cpu = seasons["cpu"]
    name, redis_url = host_user(agent_redis.acl_rules)
    site.claim_list = agent_redis.claim_list(name)
    enqueue(cpu.rejudge_queue_name, 1)
    enqueue(cpu.queue_name, 2)
    enqueue(cpu.queue_name, 3)
    enqueue(cpu.final_queue_name, 4)
    done = run_agent_burst(site, name, redis_url, cpu.queue_name)
    assert done.returncode == 0, done.stderr[-3000:]
    assert started_runs(site) == [4, 2, 3, 1]
    beat = next(r for r in site.requests if r["path"] == "/api/v1/agent/heartbeat")
    assert beat["json"]["queues"] == [cpu.final_queue_name, cpu.queue_name, cpu.rejudge_queue_name]


def test_under_a_site_without_the_final_queue_a_real_agent_judges_the_other_queues(seasons, site, host_user):
    cpu = seasons["cpu"]
    name, redis_url = host_user(old_site_rules)
    site.claim_list = agent_redis.claim_list(name)
    assert b"no permissions" in dry_run(agent_redis.username_for(name), "LMOVE", f"rq:queue:{cpu.final_queue_name}",
                                        site.claim_list, "LEFT", "RIGHT")
    enqueue(cpu.rejudge_queue_name, 1)
    enqueue(cpu.queue_name, 2)
    done = run_agent_burst(site, name, redis_url, cpu.queue_name)
    assert done.returncode == 0, done.stderr[-3000:]
    assert started_runs(site) == [2, 1]
    assert done.stderr.count(f"may not take jobs from rq:queue:{cpu.final_queue_name}") == 1  # said once


def test_a_worker_passes_over_a_final_queue_redis_refuses_it_and_takes_it_once_granted(
        seasons, host_user, monkeypatch):
    """The take itself (worker.job_claims), as a host's worker makes it under its own Redis user: refused
    the final queue, it takes from the next one; once the site grants the queue (an upgraded site's
    sweep rewrites the user) it takes from it again, after REFUSED_QUEUE_RETRY_S."""
    from redis import Redis

    from profiler_agent.worker import job_claims

    cpu = seasons["cpu"]
    name, redis_url = host_user(old_site_rules)
    connection = Redis.from_url(redis_url)
    queues = [Queue(q, connection=connection, serializer=queueing.SERIALIZER) for q in listen_order([cpu.queue_name])]
    monkeypatch.setattr(job_claims, "_claim_list", [agent_redis.claim_list(name)])
    monkeypatch.setattr(job_claims, "_refused_at", {})

    def take():
        job, queue = job_claims.ClaimingQueue.dequeue_any(queues, None, connection=connection,
                                                          serializer=queueing.SERIALIZER)
        return job.kwargs["run_id"], queue.name

    enqueue(cpu.queue_name, 1)
    assert take() == (1, cpu.queue_name)
    assert job_claims.passed_over(f"rq:queue:{cpu.final_queue_name}")

    user = agent_redis.username_for(name)
    password = urlsplit(redis_url).password
    queueing.connection().execute_command("ACL", "SETUSER", user, *agent_redis.acl_rules(name, ["cpu"]), f">{password}")
    enqueue(cpu.queue_name, 2)
    enqueue(cpu.final_queue_name, 3)
    assert take() == (2, cpu.queue_name)  # passed over a while yet
    monkeypatch.setattr(job_claims, "REFUSED_QUEUE_RETRY_S", 0.0)
    assert take() == (3, cpu.final_queue_name)


def test_the_final_test_page_warns_while_the_agents_online_are_too_old_to_read_the_final_queue(
        seasons, organizer, client):
    """A site with the final queue and hosts from before it: nothing would take the final runs."""
    cpu = seasons["cpu"]
    _, token = accounts.create_agent("old-host", [cpu])

    def heartbeat(queues):
        answer = client.post("/api/v1/agent/heartbeat", {"queues": queues, "worker": {"name": "old-host-cpu0"}},
                             content_type="application/json", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.content

    def warns():
        client.force_login(organizer.user)
        page = client.get("/organizer/seasons/S1/final-system-test/", headers={"Accept-Language": "en"})
        return f"No agent online for CPU reads its final system test queue ({cpu.final_queue_name})" in (
            page.content.decode())

    assert not warns()  # no worker online at all: nothing to say of their age
    heartbeat([cpu.queue_name, cpu.rejudge_queue_name])  # what an agent from before the final queue declares
    assert warns()
    heartbeat(listen_order([cpu.queue_name]))  # upgraded
    assert not warns()
