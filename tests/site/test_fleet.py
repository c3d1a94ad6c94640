"""The fleet on the site: per-worker heartbeats, runs recording their worker and GPU, drain and resume,
harness-version minimums; real database and Redis, the agent API through Django's test client."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.site.judging_helpers import hand_out_to_token
from submissions import fleet_status, harness_versions, queueing
from submissions.bundles import build_bundle
from submissions.models import AgentWorker, AuditEntry, GpuType, Run, RunStatus
from submissions.services import accounts, fleet, submitting
from tests.site.bundle_files import valid_files
from tests.site.test_agent_api import agent_headers, other_agent, passed_result  # noqa: F401 (a fixture)


def worker_report(name, *, index=0, uuid="GPU-aaaa", version="1.0", current_run=None):
    gpu = None if index is None else {"index": index, "uuid": uuid, "model": "NVIDIA H200", "driver": "570.1",
                                      "memory_bytes": 150 * 2**30}
    return {"name": name, "gpu": gpu, "harness_version": version, "current_run": current_run}


def beat(client, token, report):
    return client.post("/api/v1/agent/heartbeat", {"queues": ["gpu.cpu"], "worker": report},
                       content_type="application/json", headers=agent_headers(token))


def start(client, run, token, worker, *, uuid="GPU-aaaa", version="1.0", attempt=None):
    body = {"attempt": attempt or run.attempts, "agent": worker, "worker": worker, "gpu_uuid": uuid,
            "harness_version": version}
    hand_out_to_token(run, token)
    return client.post(f"/api/v1/agent/runs/{run.pk}/start", body, content_type="application/json",
                       headers=agent_headers(token))


@pytest.fixture
def submit(season, alice, django_capture_on_commit_callbacks):
    issue = submitting.open_issue(season, alice, title="ReLU")

    def make():
        with django_capture_on_commit_callbacks(execute=True):
            submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
        return submission.runs.get(gpu_type__slug="cpu")

    return make


def test_a_heartbeat_stores_its_worker_and_answers_take_jobs(client, agent_and_token):
    agent, token = agent_and_token
    response = beat(client, token, worker_report("host-gpu1", index=1, uuid="GPU-1111"))
    assert response.status_code == 200, response.content
    assert response.json()["accept_jobs"] is True and response.json()["outdated"] is False
    worker = AgentWorker.objects.get(agent=agent, name="host-gpu1")
    assert (worker.gpu_index, worker.gpu_uuid, worker.gpu_model, worker.driver, worker.memory_bytes) == (
        1, "GPU-1111", "NVIDIA H200", "570.1", 150 * 2**30)
    assert worker.harness_version == "1.0" and worker.last_heartbeat_at is not None
    agent.refresh_from_db()
    assert agent.last_heartbeat_at is not None and agent.queues == ["gpu.cpu"]
    # A CPU worker has no GPU; a second heartbeat updates the same row.
    assert beat(client, token, worker_report("host-gpu1", index=None)).status_code == 200
    worker.refresh_from_db()
    assert (worker.gpu_index, worker.gpu_uuid, worker.memory_bytes) == (None, "", None)
    assert AgentWorker.objects.filter(agent=agent).count() == 1
    refused = beat(client, token, worker_report("../etc"))
    assert refused.status_code == 422 and "worker.name: String should match pattern" in refused.json()["detail"]
    assert beat(client, "not-a-token", worker_report("host-gpu1")).status_code == 401


def test_a_run_records_the_worker_and_gpu_that_judged_it(client, submit, agent_and_token, other_agent):
    agent, token = agent_and_token
    run = submit()
    answer = start(client, run, token, "host-gpu1", uuid="GPU-1111")
    assert answer.status_code == 200, answer.content
    run.refresh_from_db()
    worker = AgentWorker.objects.get(agent=agent, name="host-gpu1")
    assert (run.worker, run.gpu_uuid, run.agent, run.status) == (worker, "GPU-1111", agent, RunStatus.RUNNING)
    assert worker.current_run == run
    # The heartbeat keeps the run it names only while that run is really its own.
    beat(client, token, worker_report("host-gpu1", current_run=run.pk))
    worker.refresh_from_db()
    assert worker.current_run == run
    beat(client, other_agent[1], worker_report("host-gpu1", current_run=run.pk))  # another host's worker
    assert AgentWorker.objects.get(agent=other_agent[0], name="host-gpu1").current_run is None
    # A sibling worker of the same host cannot take it over.
    taken = start(client, run, token, "host-gpu2", uuid="GPU-2222")
    assert taken.status_code == 409 and "another worker" in taken.json()["detail"]
    body = {**passed_result(), "device": {**passed_result()["device"], "uuid": "GPU-1111"}}
    done = client.post(answer.json()["result_url"], body, content_type="application/json",
                       headers=agent_headers(token, answer.json()["job_secret"]))
    assert done.status_code == 200, done.content
    run.refresh_from_db()
    assert (run.status, run.worker, run.gpu_uuid, run.result["device"]["uuid"]) == ("done", worker, "GPU-1111",
                                                                                   "GPU-1111")
    beat(client, token, worker_report("host-gpu1", current_run=run.pk))
    worker.refresh_from_db()
    assert worker.current_run is None  # finished: not judging it any more


def test_a_drained_worker_is_told_to_stop_and_a_run_it_still_starts_goes_back_to_the_front(
        client, submit, agent_and_token, organizer, django_capture_on_commit_callbacks):
    agent, token = agent_and_token
    first, second = submit(), submit()
    beat(client, token, worker_report("host-gpu0"))
    worker = AgentWorker.objects.get(name="host-gpu0")
    assert fleet.drain_worker(worker, actor=organizer.user, reason="driver upgrade") is True
    assert fleet.drain_worker(worker, actor=organizer.user) is False  # already draining: nothing recorded
    answer = beat(client, token, worker_report("host-gpu0")).json()
    assert answer["accept_jobs"] is False and answer["why"] == "draining: driver upgrade"

    queue = queueing.judging_queue(second.gpu_type.queue_name)
    queue.remove(second.rq_job_id)  # the race: it had dequeued `second` before it heard of the drain
    with django_capture_on_commit_callbacks(execute=True):
        refused = start(client, second, token, "host-gpu0")
    assert refused.status_code == 403
    assert refused.json()["accept_jobs"] is False and refused.json()["retry_after_s"] is None
    assert "draining" in refused.json()["detail"]
    second.refresh_from_db()
    assert (second.status, second.attempts, second.worker_refusals, second.worker) == ("queued", 2, 1, None)
    assert queue.get_job_ids() == [second.rq_job_id, first.rq_job_id]  # back at the front, as a new attempt
    assert AuditEntry.objects.filter(action="run.requeued", object_id=str(second.pk),
                                     reason="worker host-gpu0: draining: driver upgrade").exists()
    assert AuditEntry.objects.filter(action="run.start_refused", object_id=str(second.pk)).exists()
    drained = AuditEntry.objects.get(action="worker.drained", object_id=str(worker.pk))
    assert (drained.actor, drained.reason, drained.after) == (organizer.user, "driver upgrade", {"draining": True})

    assert start(client, second, token, "host-gpu1").status_code == 200  # another worker takes it
    assert fleet.resume_worker(worker, actor=organizer.user) is True
    assert AuditEntry.objects.filter(action="worker.resumed", object_id=str(worker.pk)).exists()
    assert beat(client, token, worker_report("host-gpu0")).json()["accept_jobs"] is True
    assert start(client, first, token, "host-gpu0").status_code == 200


def test_an_outdated_worker_is_refused_its_seasons_runs_without_spending_their_attempts(
        client, submit, season, agent_and_token, settings, django_capture_on_commit_callbacks):
    _, token = agent_and_token
    settings.RUN_MAX_ATTEMPTS = 2
    settings.FLEET_REFUSAL_PAUSE_SECONDS = 7
    season.min_harness_version = "1.10"
    season.full_clean()
    season.save()
    run = submit()
    answer = beat(client, token, worker_report("old-gpu0", version="1.9")).json()
    assert answer["accept_jobs"] is True  # other seasons' runs are still its to judge
    assert answer["outdated"] is True and answer["outdated_for"] == [{"season": "S1", "min_harness_version": "1.10"}]
    with django_capture_on_commit_callbacks(execute=True):
        refused = start(client, run, token, "old-gpu0", version="1.9")
    assert refused.status_code == 403 and refused.json()["retry_after_s"] == 7
    assert "older than season S1's minimum 1.10" in refused.json()["detail"]
    run.refresh_from_db()
    assert (run.status, run.attempts, run.worker_refusals, run.spent_attempts) == ("queued", 2, 1, 1)
    assert queueing.judging_queue(run.gpu_type.queue_name).get_job_ids()[0] == run.rq_job_id

    fresh = start(client, run, token, "new-gpu1", version="1.10.0")
    assert fresh.status_code == 200
    with django_capture_on_commit_callbacks(execute=True):  # an internal error is still retried: 1 attempt spent
        retried = client.post(fresh.json()["result_url"], {**passed_result(), "status": "internal_error", "timing": None},
                              content_type="application/json", headers=agent_headers(token, fresh.json()["job_secret"]))
    assert "requeued" in retried.json()["detail"]
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("queued", 3)
    assert beat(client, token, worker_report("new-gpu1", version="1.10")).json()["outdated"] is False


@pytest.mark.parametrize("text, ok", [("1", True), ("1.2", True), ("1.2.3", True), ("", True),
                                      ("1.2.3.4", False), ("v1.2", False), ("1.x", False), ("1..2", False),
                                      # digits of other scripts: "９.０" would read as a minimum of 9.0
                                      ("９.０", False), ("١.٢", False)])
def test_a_seasons_minimum_harness_version_is_validated(season, text, ok):
    season.min_harness_version = text
    if ok:
        season.full_clean()
    else:
        with pytest.raises(ValidationError, match="is not a harness version"):
            season.full_clean()


def test_harness_versions_compare_numerically():
    assert harness_versions.is_below("1.9", "1.10") and not harness_versions.is_below("1.10", "1.9")
    assert not harness_versions.is_below("1", "1.0.0") and not harness_versions.is_below("2", "")
    assert harness_versions.is_below(None, "1") and harness_versions.is_below("dev", "0.1")


def test_a_harness_version_is_ascii_digits_alone():
    """Python's `\\d` and int() read fullwidth and Arabic-Indic digits: a minimum typed as "９.０" was saved
    and meant 9.0, which no agent has, so every run of the season waited."""
    assert harness_versions.parse("９.０") is None and harness_versions.parse("١.٢") is None
    assert not harness_versions.is_below("1.0", "９.０")  # unreadable: no minimum, as blank
    assert harness_versions.is_below("９.０", "1.0")  # an agent reporting it fails any minimum


def test_drain_and_resume_commands_name_the_worker(agent_and_token, other_agent):
    agent, _ = agent_and_token
    worker = AgentWorker.objects.create(agent=agent, name="host-gpu0")
    AgentWorker.objects.create(agent=other_agent[0], name="host-gpu0")
    with pytest.raises(CommandError, match="several agents have a worker named host-gpu0"):
        call_command("drain_worker", "host-gpu0")
    with pytest.raises(CommandError, match="no worker named nope"):
        call_command("drain_worker", "nope")
    call_command("drain_worker", "host-gpu0", "--agent", agent.name, "--reason", "maintenance")
    worker.refresh_from_db()
    assert worker.draining and worker.drain_reason == "maintenance"
    entry = AuditEntry.objects.get(action="worker.drained")
    assert (entry.actor_label, entry.reason) == ("manage.py", "maintenance")
    call_command("resume_worker", "host-gpu0", "--agent", agent.name)
    worker.refresh_from_db()
    assert not worker.draining and AuditEntry.objects.filter(action="worker.resumed").count() == 1


def test_the_fleet_selector_gives_each_workers_state_and_counts(agent_and_token, submit, settings):
    agent, _ = agent_and_token
    now = timezone.now()
    idle, busy, drained, silent = (AgentWorker.objects.create(agent=agent, name=n, last_heartbeat_at=now)
                                   for n in ("a-idle", "b-busy", "c-drained", "d-silent"))
    AgentWorker.objects.filter(pk=drained.pk).update(draining=True)
    AgentWorker.objects.filter(pk=silent.pk).update(
        last_heartbeat_at=now - timedelta(seconds=settings.FLEET_WORKER_SILENT_SECONDS + 1))
    running, passed, failed, old = submit(), submit(), submit(), submit()
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING, worker=busy, started_at=now)
    Run.objects.filter(pk__in=[passed.pk, failed.pk]).update(status=RunStatus.DONE, worker=idle,
                                                            finished_at=now - timedelta(minutes=5))
    Run.objects.filter(pk=failed.pk).update(verdict="internal_error")
    Run.objects.filter(pk=old.pk).update(status=RunStatus.DONE, worker=idle, verdict="internal_error",
                                        finished_at=now - timedelta(hours=3))
    rows = {w.name: w for w in fleet_status.workers(now)}
    assert {name: w.state for name, w in rows.items()} == {
        "a-idle": "idle", "b-busy": "judging", "c-drained": "draining", "d-silent": "silent"}
    assert rows["b-busy"].judging_run_id == running.pk
    assert (rows["a-idle"].judged_last_hour, rows["a-idle"].failures_last_day) == (2, 2)
    assert (rows["b-busy"].judged_last_hour, rows["b-busy"].failures_last_day) == (0, 0)


def test_old_agents_without_a_worker_name_still_start_runs(client, submit, agent_and_token):
    agent, token = agent_and_token
    run = submit()
    hand_out_to_token(run, token)
    response = client.post(f"/api/v1/agent/runs/{run.pk}/start", {"attempt": 1}, content_type="application/json",
                           headers=agent_headers(token))
    assert response.status_code == 200
    run.refresh_from_db()
    assert (run.agent, run.worker, run.gpu_uuid) == (agent, None, "")
    assert GpuType.objects.filter(slug="cpu").exists()


def test_organizers_drain_and_resume_workers_from_the_admin(client, agent_and_token, organizer):
    agent, _ = agent_and_token
    worker = AgentWorker.objects.create(agent=agent, name="host-gpu0")
    organizer.user.is_superuser = True
    organizer.user.save()
    client.force_login(organizer.user)
    url = "/admin/submissions/agentworker/"
    page = client.get(url, headers={"Accept-Language": "zh-Hans"})
    assert page.status_code == 200 and "排空：完成当前运行，不再接新的运行" in page.content.decode()
    assert client.post(url, {"action": "drain", "_selected_action": [worker.pk]}).status_code == 302
    worker.refresh_from_db()
    assert worker.draining
    assert AuditEntry.objects.get(action="worker.drained").actor == organizer.user
    client.post(url, {"action": "resume", "_selected_action": [worker.pk]})
    worker.refresh_from_db()
    assert not worker.draining and AuditEntry.objects.filter(action="worker.resumed", actor=organizer.user).exists()
