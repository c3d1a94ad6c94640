"""The agent side of the API: tokens, start (binding a run to an agent), job secrets, idempotent results,
schema validation."""
import html
import io
import json
import zipfile
import zlib

import pytest

from submissions import queueing
from submissions.bundles import build_bundle
from submissions.models import AuditEntry, GpuType, RunStatus, Standing, hash_secret
from submissions.rules import ranked_runs
from submissions.services import accounts, submitting
from tests.site.judging_helpers import hand_out_to_token
from tests.site.bundle_files import valid_files
from tests.site.conftest import job_kwargs


def passed_result(speedup=2.0):
    return {
        "schema": 1, "status": "passed", "flags": [],
        "device": {"kind": "cpu", "name": "Test CPU", "uuid": None, "driver": None, "torch": "2.13.0",
                   "peak_gbps": None, "peak_tflops": None},
        "correctness": {"passed": True, "trials": 4, "max_abs_err": 0.0, "max_rel_err": 0.0, "atol": 1e-4, "rtol": 1e-4},
        "timing": {"reference": {"median_ms": 2.0, "mean_ms": 2.1, "min_ms": 1.9, "std_ms": 0.1, "runs": 20},
                   "candidate": {"median_ms": 2.0 / speedup, "mean_ms": 1.1, "min_ms": 0.9, "std_ms": 0.1, "runs": 20},
                   "speedup": speedup},
        "metrics": {"flops": None, "bytes": 1024, "tflops": None, "bandwidth_gbs": 1.5,
                    "pct_peak_bandwidth": None, "pct_peak_flops": None},
        "telemetry": None, "ncu": None, "variants": {}, "self_test": None,
        "logs": {"compile": "", "stdout": "", "stderr": ""},
        "durations_s": {"compile": 1.0, "correctness": 0.2, "timing": 0.5, "total": 2.0},
    }


@pytest.fixture
def queued_run(season, alice, django_capture_on_commit_callbacks):
    issue = submitting.open_issue(season, alice, title="ReLU")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    run = submission.runs.get(gpu_type__slug="cpu")
    return run, job_kwargs(run)


@pytest.fixture
def other_agent(season):
    """A second registered agent serving the same GPU types: another volunteer's host."""
    return accounts.create_agent("other-agent", GpuType.objects.all())


def agent_headers(token, secret=None):
    headers = {"Authorization": f"Bearer {token}"}
    if secret is not None:
        headers["X-Job-Secret"] = secret
    return headers


def start(client, run, token, attempt=None):
    hand_out_to_token(run, token)
    return client.post(f"/api/v1/agent/runs/{run.pk}/start", {"attempt": attempt or run.attempts},
                       content_type="application/json", headers=agent_headers(token))


def started(client, run, token):
    response = start(client, run, token)
    assert response.status_code == 200, response.content
    return response.json()


def post_result(client, answer, token, body):
    return client.post(answer["result_url"], body, content_type="application/json",
                       headers=agent_headers(token, answer["job_secret"]))


def test_the_job_names_the_agent_function_with_json_run_id_and_attempt_only(queued_run):
    run, kwargs = queued_run
    assert kwargs == {"run_id": run.pk, "attempt": 1}
    raw = queueing.connection().hgetall(f"rq:job:{run.rq_job_id}")
    assert json.loads(zlib.decompress(raw[b"data"]) if raw[b"data"][:1] == b"x" else raw[b"data"]) == [
        queueing.JOB_FUNCTION, None, [], {"run_id": run.pk, "attempt": 1}]
    assert run.job_secret_hash == ""  # no secret exists until an agent starts the attempt


def test_start_binds_the_run_and_answers_its_secret_paths_and_options(client, queued_run, agent_and_token, settings):
    run, _ = queued_run
    agent, token = agent_and_token
    answer = started(client, run, token)
    assert answer["bundle_url"] == f"/api/v1/agent/runs/{run.pk}/bundle"
    assert answer["result_url"] == f"/api/v1/agent/runs/{run.pk}/result"
    assert answer["options"] == {"run_timeout_s": settings.JUDGE_TIMEOUT_SECONDS,
                                 "compile_timeout_s": settings.JUDGE_COMPILE_TIMEOUT_SECONDS}
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.agent == agent
    assert len(answer["job_secret"]) > 20 and hash_secret(answer["job_secret"]) == run.job_secret_hash


def test_start_refuses_unknown_finished_stale_unserved_and_taken_runs(client, queued_run, agent_and_token,
                                                                       other_agent, season):
    run, _ = queued_run
    agent, token = agent_and_token
    other, other_token = other_agent
    assert client.post("/api/v1/agent/runs/999999/start", {"attempt": 1}, content_type="application/json",
                       headers=agent_headers(token)).status_code == 404
    stale = start(client, run, token, attempt=run.attempts + 1)
    assert stale.status_code == 403 and "stale attempt" in stale.json()["detail"]
    other.gpu_types.remove(run.gpu_type)  # the queues it declares do not matter: the site decides
    other.queues = [run.gpu_type.queue_name]
    other.save()
    unserved = start(client, run, other_token)
    assert unserved.status_code == 403 and "does not serve GPU type cpu" in unserved.json()["detail"]
    answer = started(client, run, token)
    other.gpu_types.add(run.gpu_type)
    taken = start(client, run, other_token)
    assert taken.status_code == 409 and "another agent" in taken.json()["detail"]
    run.refresh_from_db()
    assert run.agent == agent and hash_secret(answer["job_secret"]) == run.job_secret_hash
    assert AuditEntry.objects.filter(action="run.start_refused", object_id=str(run.pk),
                                     actor_label="agent:other-agent").count() == 2
    assert post_result(client, answer, token, passed_result()).status_code == 200
    assert start(client, run, token).status_code == 409  # finished


def test_a_repeated_start_by_the_same_agent_reissues_the_secret(client, queued_run, agent_and_token):
    run, _ = queued_run
    _, token = agent_and_token
    first, second = started(client, run, token), started(client, run, token)
    assert first["job_secret"] != second["job_secret"]
    assert post_result(client, first, token, passed_result()).status_code == 403  # the earlier one died
    assert post_result(client, second, token, passed_result()).status_code == 200


def test_bundle_download_needs_the_starting_agent_and_its_secret(client, queued_run, agent_and_token, other_agent):
    run, _ = queued_run
    _, token = agent_and_token
    _, other_token = other_agent
    url = f"/api/v1/agent/runs/{run.pk}/bundle"
    assert client.get(url).status_code == 401
    assert client.get(url, headers=agent_headers(token, "x")).status_code == 403  # not started yet
    answer = started(client, run, token)
    assert client.get(url, headers=agent_headers("not-a-token", answer["job_secret"])).status_code == 401
    denied = client.get(url, headers=agent_headers(token, "wrong-secret"))
    assert denied.status_code == 403 and "job secret" in denied.json()["detail"]
    stolen = client.get(url, headers=agent_headers(other_token, answer["job_secret"]))
    assert stolen.status_code == 403 and "not started by agent other-agent" in stolen.json()["detail"]
    assert AuditEntry.objects.filter(action="run.bundle_refused", actor_label="agent:other-agent").exists()
    ok = client.get(url, headers=agent_headers(token, answer["job_secret"]))
    assert ok.status_code == 200 and ok["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(ok.content)).namelist()
    assert sorted(names) == ["cudacode.py", "readme.md", "torchcode.py"]


def test_result_refuses_wrong_token_wrong_secret_another_agent_and_a_replay(client, queued_run, agent_and_token,
                                                                            other_agent):
    run, _ = queued_run
    _, token = agent_and_token
    _, other_token = other_agent
    answer = started(client, run, token)
    url, body = answer["result_url"], passed_result()
    assert client.post(url, body, content_type="application/json",
                       headers=agent_headers("forged", answer["job_secret"])).status_code == 401
    assert client.post(url, body, content_type="application/json", headers=agent_headers(token, "guess")).status_code == 403
    forged = post_result(client, answer, other_token, passed_result(speedup=999.0))  # B holds A's secret, even
    assert forged.status_code == 403
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.speedup is None
    assert AuditEntry.objects.filter(action="run.forged_report_refused", actor_label="agent:other-agent").exists()
    assert not Standing.objects.filter(contestant=run.submission.contestant, best_speedup__isnull=False).exists()

    first = post_result(client, answer, token, body)
    assert first.status_code == 200, first.content
    run.refresh_from_db()
    assert (run.status, run.verdict, run.speedup, run.candidate_median_ms) == ("done", "passed", 2.0, 1.0)

    replay = post_result(client, answer, token, passed_result(speedup=50.0))
    assert replay.status_code == 409 and "already reported" in replay.json()["detail"]
    assert post_result(client, answer, other_token, passed_result(speedup=50.0)).status_code == 403
    run.refresh_from_db()
    assert run.speedup == 2.0
    assert AuditEntry.objects.filter(action="run.verdict", object_id=str(run.pk)).count() == 1
    assert ranked_runs.figure(run.submission.runs.all()).speedup == 2.0


@pytest.mark.parametrize("mutate, problem", [
    (lambda r: r.update(status="great"), "status"),
    (lambda r: r.update(status="cancelled"), "status"),  # an organizer's verdict, never an agent's
    (lambda r: r.pop("status"), "status"),
    (lambda r: r.update(schema=2), "schema"),
    (lambda r: r["timing"]["candidate"].update(median_ms=-1), "timing.candidate.median_ms"),
    (lambda r: r.update(reason=["not", "one", "line"]), "reason"),
])
def test_result_is_schema_validated(client, queued_run, agent_and_token, mutate, problem):
    run, _ = queued_run
    _, token = agent_and_token
    answer = started(client, run, token)
    body = passed_result()
    mutate(body)
    response = post_result(client, answer, token, body)
    assert response.status_code == 422
    assert problem in response.json()["detail"]
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING


def test_the_reason_of_a_verdict_is_stored_and_shown_to_who_sees_the_logs(client, queued_run, agent_and_token,
                                                                         alice, bob):
    run, _ = queued_run
    _, token = agent_and_token
    answer = started(client, run, token)
    reason = "trial 1: output 0: max abs error 3.200e-01 > atol"
    body = {**passed_result(), "status": "wrong_answer", "reason": reason}
    body["correctness"]["passed"] = False
    assert post_result(client, answer, token, body).status_code == 200
    run.refresh_from_db()
    assert run.verdict == "wrong_answer" and run.result["reason"] == reason
    fragment = f"/submissions/{run.submission_id}/runs/"
    client.force_login(alice.user)  # the author
    english = html.unescape(client.get(fragment, headers={"Accept-Language": "en"}).content.decode())
    assert f'<span class="muted">Reason:</span> {reason}' in english  # escaped in the page, whole once unescaped
    chinese = client.get(fragment, headers={"Accept-Language": "zh-CN"}).content.decode()
    assert '<span class="muted">原因:</span>' in chinese and "trial 1: output 0: max abs error" in chinese
    client.force_login(bob.user)  # another contestant sees the verdict, not the reason (nor the logs)
    other = client.get(fragment).content.decode()
    assert "wrong" in other.lower() and "max abs error" not in other


def test_internal_error_is_retried_as_a_new_attempt_with_a_new_secret(client, queued_run, agent_and_token, settings,
                                                                      django_capture_on_commit_callbacks):
    run, _ = queued_run
    _, token = agent_and_token
    settings.RUN_MAX_ATTEMPTS = 2
    answer = started(client, run, token)
    body = {**passed_result(), "status": "internal_error", "timing": None}
    with django_capture_on_commit_callbacks(execute=True):
        response = post_result(client, answer, token, body)
    assert response.status_code == 200 and "requeued" in response.json()["detail"]
    run.refresh_from_db()
    assert (run.status, run.attempts, run.verdict, run.agent) == ("queued", 2, "", None)
    assert job_kwargs(run) == {"run_id": run.pk, "attempt": 2}
    # The old attempt's secret no longer counts, nor does starting the old attempt.
    assert post_result(client, answer, token, passed_result()).status_code == 403
    assert start(client, run, token, attempt=1).status_code == 403
    fresh = started(client, run, token)
    assert fresh["job_secret"] != answer["job_secret"]
    assert post_result(client, fresh, token, body).status_code == 200
    run.refresh_from_db()
    assert (run.status, run.verdict) == ("done", "internal_error")


def test_revoking_an_agent_requeues_its_runs_and_its_token_stops_working(client, queued_run, agent_and_token,
                                                                         django_capture_on_commit_callbacks):
    run, _ = queued_run
    agent, token = agent_and_token
    answer = started(client, run, token)
    with django_capture_on_commit_callbacks(execute=True):
        assert accounts.revoke_agent(agent) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts, run.agent) == ("queued", 2, None)
    assert post_result(client, answer, token, passed_result()).status_code == 401
    assert job_kwargs(run) == {"run_id": run.pk, "attempt": 2}


def test_heartbeat_records_inventory(client, agent_and_token):
    agent, token = agent_and_token
    payload = {"name": "gpu-host-1", "queues": ["gpu.h100"],
               "inventory": {"devices": [{"kind": "cuda", "name": "NVIDIA H100", "uuid": "GPU-1", "memory_bytes": 8e10}]},
               "versions": {"agent": "0.1.0", "torch": "2.11.0"}}
    assert client.post("/api/v1/agent/heartbeat", payload, content_type="application/json").status_code == 401
    response = client.post("/api/v1/agent/heartbeat", payload, content_type="application/json",
                           headers=agent_headers(token))
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.queues == ["gpu.h100"] and agent.inventory["devices"][0]["name"] == "NVIDIA H100"
    assert agent.last_heartbeat_at is not None


def test_unknown_run_is_a_json_404(client, agent_and_token):
    _, token = agent_and_token
    response = client.get("/api/v1/agent/runs/999999/bundle", headers=agent_headers(token, "x"))
    assert response.status_code == 404 and "run 999999 does not exist" in response.json()["detail"]


def post_progress(client, answer, token, stage, attempt=1, secret=None):
    return client.post(answer["progress_url"], {"attempt": attempt, "stage": stage}, content_type="application/json",
                       headers=agent_headers(token, secret or answer["job_secret"]))


def test_progress_from_the_judging_agent_sets_the_stage_of_the_running_attempt(client, queued_run, agent_and_token,
                                                                                other_agent):
    run, _ = queued_run
    _, token = agent_and_token
    _, other_token = other_agent
    answer = started(client, run, token)
    assert answer["progress_url"] == f"/api/v1/agent/runs/{run.pk}/progress"
    for stage in ("compiling", "checking", "timing"):
        assert post_progress(client, answer, token, stage).status_code == 200
    run.refresh_from_db()
    assert run.stage == "timing"

    assert post_progress(client, answer, token, "sleeping").status_code == 422  # not a stage
    assert post_progress(client, answer, token, "profiling", secret="guess").status_code == 403
    assert post_progress(client, answer, other_token, "profiling").status_code == 403
    assert post_progress(client, answer, token, "profiling", attempt=2).status_code == 403
    assert AuditEntry.objects.filter(action="run.progress_refused", object_id=str(run.pk)).count() == 3
    run.refresh_from_db()
    assert run.stage == "timing"

    assert post_result(client, answer, token, passed_result()).status_code == 200
    late = post_progress(client, answer, token, "self_test")  # crossed the result on the wire
    assert late.status_code == 409
    run.refresh_from_db()
    assert run.stage == "timing" and run.status == RunStatus.DONE


def test_a_new_attempt_starts_without_a_stage(client, queued_run, agent_and_token):
    run, _ = queued_run
    _, token = agent_and_token
    answer = started(client, run, token)
    assert post_progress(client, answer, token, "checking").status_code == 200
    failed = dict(passed_result(), status="internal_error")
    assert post_result(client, answer, token, failed).status_code == 200  # retried: a new attempt
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 2 and run.stage == ""
    assert post_progress(client, answer, token, "timing").status_code == 403  # the first attempt's secret is dead


def test_the_agents_judging_stages_are_the_sites():
    from profiler_agent.protocol.vocabulary import JUDGING_STAGES
    from submissions.models import RunStage

    assert list(JUDGING_STAGES) == list(RunStage.values)
