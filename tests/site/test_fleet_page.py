"""The organizers' fleet page, its JSON twin and its drain/resume buttons: real database (SQLite and
PostgreSQL), real Redis queues (this test's own prefix), Django's test client."""
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions import fleet_status, queueing
from submissions.models import AgentWorker, AuditEntry, GpuType, Run, RunStatus
from tests.site.test_fleet import submit  # noqa: F401 (a fixture: a submission's cpu run, queued in Redis)

ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}


@pytest.fixture
def worker(agent_and_token):
    agent, _ = agent_and_token
    return AgentWorker.objects.create(agent=agent, name="host-gpu0", gpu_index=0, gpu_model="NVIDIA H200",
                                      gpu_uuid="GPU-0123456789abcdef", memory_bytes=141 * 2**30,
                                      harness_version="1.2", last_heartbeat_at=timezone.now())


def test_queue_depths_come_from_redis_and_waiting_runs_from_the_database(submit, settings):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 2
    runs = [submit() for _ in range(3)]  # two queued in Redis, the third held back by the cap
    cpu = GpuType.objects.get(slug="cpu")
    queueing.enqueue_judging(cpu.rejudge_queue_name, queueing.job_id(999, 1, cpu.slug), {"run_id": 999, "attempt": 1})
    enqueued = timezone.now() - timedelta(minutes=7)
    Run.objects.filter(pk=runs[0].pk).update(enqueued_at=enqueued)

    rows = {q.slug: q for q in fleet_status.queues(now=enqueued + timedelta(minutes=7, seconds=3))}
    assert (rows["cpu"].fresh_depth, rows["cpu"].rejudge_depth, rows["cpu"].waiting_runs) == (2, 1, 1)
    assert rows["cpu"].oldest_queued_at == enqueued and rows["cpu"].oldest_queued_age_s == 423
    # The c500 runs are capped too (2 queued, 1 waiting); a type with nothing queued has no oldest age.
    assert (rows["c500"].fresh_depth, rows["c500"].waiting_runs) == (2, 1)
    GpuType.objects.create(slug="h100", name="H100")
    empty = {q.slug: q for q in fleet_status.queues()}["h100"]
    assert (empty.fresh_depth, empty.rejudge_depth, empty.waiting_runs, empty.oldest_queued_age_s) == (0, 0, 0, None)


def test_the_overview_and_its_json_twin_carry_the_same_workers(worker, submit):
    run = submit()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker=worker, started_at=timezone.now())
    data = fleet_status.overview()
    row = data["workers"][0]
    assert (row.state, row.judging_run_id, row.judging_submission_id) == ("judging", run.pk, run.submission_id)
    assert row.gpu_uuid_short == "GPU-01234567…" and 0 <= row.heartbeat_age_s <= 5
    twin = fleet_status.overview_json(data)
    assert twin["workers"][0]["gpu"]["uuid"] == "GPU-0123456789abcdef"
    assert {k: twin["workers"][0][k] for k in ("agent", "name", "state", "judging_run", "harness_version")} == {
        "agent": "test-agent", "name": "host-gpu0", "state": "judging", "judging_run": run.pk, "harness_version": "1.2"}
    assert {q["gpu_type"] for q in twin["queues"]} == {"cpu", "c500"}


@pytest.mark.parametrize("url", ["/organizer/fleet/", "/organizer/fleet.json"])
def test_only_organizers_see_the_fleet(client, url, worker, alice, organizer):
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client.force_login(alice.user)
    assert client.get(url).status_code == 403
    client.force_login(organizer.user)
    answer = client.get(url)
    assert answer.status_code == 200 and "host-gpu0" in answer.content.decode()


@pytest.mark.parametrize("action", ["drain", "resume"])
def test_contestants_and_anonymous_visitors_cannot_drain_or_resume(client, worker, alice, action):
    AgentWorker.objects.filter(pk=worker.pk).update(draining=action == "resume")
    url = f"/organizer/fleet/workers/{worker.pk}/{action}/"
    assert client.post(url, {"reason": "x"}).status_code == 302  # to the login page
    client.force_login(alice.user)
    assert client.post(url, {"reason": "x"}).status_code == 403
    worker.refresh_from_db()
    assert worker.draining is (action == "resume")
    assert not AuditEntry.objects.filter(action__startswith="worker.").exists()


def test_an_organizer_drains_and_resumes_from_the_page(client, worker, organizer):
    client.force_login(organizer.user)
    drain, resume = (f"/organizer/fleet/workers/{worker.pk}/{a}/" for a in ("drain", "resume"))
    assert client.get(drain).status_code == 405  # POST only
    refused = client.post(drain, {"reason": "  "}, follow=True)
    assert "the reason is kept in the audit trail" in refused.content.decode()
    worker.refresh_from_db()
    assert not worker.draining

    done = client.post(drain, {"reason": "driver upgrade"}, follow=True, headers=ZH)
    assert "test-agent/host-gpu0 正在排空" in done.content.decode()
    worker.refresh_from_db()
    assert (worker.draining, worker.drain_reason) == (True, "driver upgrade")
    entry = AuditEntry.objects.get(action="worker.drained")
    assert (entry.actor, entry.reason, entry.object_id) == (organizer.user, "driver upgrade", str(worker.pk))
    assert "already draining" in client.post(drain, {"reason": "again"}, follow=True).content.decode()
    assert client.get("/organizer/fleet.json").json()["workers"][0]["state"] == "draining"

    assert "takes runs again" in client.post(resume, follow=True).content.decode()
    worker.refresh_from_db()
    assert not worker.draining and AuditEntry.objects.get(action="worker.resumed").actor == organizer.user
    assert "was not draining" in client.post(resume, follow=True).content.decode()
    assert client.post("/organizer/fleet/workers/99999/drain/", {"reason": "x"}).status_code == 404


@pytest.mark.parametrize("language, texts", [
    ({"Accept-Language": "en-US"}, ["Fleet", "judging", "run #", "42 seconds ago", "7 minutes ago", "GPU-01234567…",
                                    "141.0\xa0GB", "2 h 5 min ago"]),
    (ZH, ["集群", "评测中", "运行 #", "42 秒前", "7 分钟前", "GPU-01234567…", "2 小时 5 分钟前"]),
])
def test_the_page_shows_states_and_ages_in_the_readers_language(client, organizer, worker, submit, language, texts):
    run, queued = submit(), submit()
    now = timezone.now()  # after the submissions, which may take a second on a loaded host: "43 seconds ago"
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker=worker, started_at=now)
    Run.objects.filter(pk=queued.pk).update(enqueued_at=now - timedelta(minutes=7, seconds=10))
    AgentWorker.objects.filter(pk=worker.pk).update(last_heartbeat_at=now - timedelta(seconds=42))
    AgentWorker.objects.create(agent=worker.agent, name="host-gpu1", last_heartbeat_at=now - timedelta(hours=2, minutes=5))
    client.force_login(organizer.user)
    page = client.get("/organizer/fleet/", headers=language).content.decode()
    for text in texts:
        assert text in page
    assert f'href="/organizer/submissions/{run.submission_id}/"' in page


def test_a_judging_worker_shows_how_long_its_run_has_been_judged_and_the_limit(client, worker, submit, organizer,
                                                                                settings):
    """The walk-through's "judging run #14", with no sign of how long: a run that never ends showed the
    same for the whole limit."""
    settings.RUN_DEADLINE_SECONDS = 1200
    run = submit()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker=worker,
                                         started_at=timezone.now() - timedelta(seconds=754))
    twin = fleet_status.overview_json(fleet_status.overview())
    assert twin["run_deadline_s"] == 1200 and 754 <= twin["workers"][0]["judging_elapsed_s"] <= 760
    client.force_login(organizer.user)
    settings.RUN_DEADLINE_SECONDS = 6900  # written as the submission page and gpucf write it: 1:55:00
    for headers, words in (({}, ("for 12:3", "of at most 1:55:00")), (ZH, ("已评测 12:3", "最长 1:55:00"))):
        cell = client.get("/organizer/fleet/", headers=headers).content.decode().split('class="muted elapsed">')[1]
        assert all(word in cell.split("</span>")[0] for word in words), cell[:200]
