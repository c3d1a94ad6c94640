"""The agent side of the API: tokens, job secrets, idempotent results, schema validation."""
import html
import io
import zipfile

import pytest

from submissions.bundles import build_bundle
from submissions.models import AuditEntry, Run, RunStatus, Standing
from submissions.services import submitting
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


def agent_headers(token, secret=None):
    headers = {"Authorization": f"Bearer {token}"}
    if secret is not None:
        headers["X-Job-Secret"] = secret
    return headers


def test_job_names_the_agent_function_and_carries_urls_and_a_secret(queued_run):
    run, kwargs = queued_run
    assert kwargs["run_id"] == run.pk
    assert kwargs["bundle_url"] == f"/api/v1/agent/runs/{run.pk}/bundle"
    assert kwargs["result_url"] == f"/api/v1/agent/runs/{run.pk}/result"
    assert kwargs["start_url"] == f"/api/v1/agent/runs/{run.pk}/start"
    assert len(kwargs["job_secret"]) > 20 and kwargs["job_secret"] not in run.job_secret_hash


def test_bundle_download_needs_token_and_secret(client, queued_run, agent_and_token):
    run, kwargs = queued_run
    _, token = agent_and_token
    url = kwargs["bundle_url"]
    assert client.get(url).status_code == 401
    assert client.get(url, headers=agent_headers("not-a-token", kwargs["job_secret"])).status_code == 401
    denied = client.get(url, headers=agent_headers(token, "wrong-secret"))
    assert denied.status_code == 403 and "job secret" in denied.json()["detail"]
    ok = client.get(url, headers=agent_headers(token, kwargs["job_secret"]))
    assert ok.status_code == 200 and ok["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(ok.content)).namelist()
    assert sorted(names) == ["cudacode.py", "readme.md", "torchcode.py"]


def test_result_refuses_wrong_token_wrong_secret_and_a_replay(client, queued_run, agent_and_token):
    run, kwargs = queued_run
    _, token = agent_and_token
    url = kwargs["result_url"]
    body = passed_result()
    assert client.post(url, body, content_type="application/json",
                       headers=agent_headers("forged", kwargs["job_secret"])).status_code == 401
    wrong_secret = client.post(url, body, content_type="application/json", headers=agent_headers(token, "guess"))
    assert wrong_secret.status_code == 403
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED

    first = client.post(url, body, content_type="application/json", headers=agent_headers(token, kwargs["job_secret"]))
    assert first.status_code == 200, first.content
    run.refresh_from_db()
    assert (run.status, run.verdict, run.speedup, run.candidate_median_ms) == ("done", "passed", 2.0, 1.0)

    replay = client.post(url, passed_result(speedup=50.0), content_type="application/json",
                         headers=agent_headers(token, kwargs["job_secret"]))
    assert replay.status_code == 409 and "already reported" in replay.json()["detail"]
    run.refresh_from_db()
    assert run.speedup == 2.0
    assert AuditEntry.objects.filter(action="run.verdict", object_id=str(run.pk)).count() == 1
    assert Standing.objects.get(contestant=run.submission.contestant).best_speedup == 2.0


@pytest.mark.parametrize("mutate, problem", [
    (lambda r: r.update(status="great"), "status"),
    (lambda r: r.pop("status"), "status"),
    (lambda r: r.update(schema=2), "schema"),
    (lambda r: r["timing"]["candidate"].update(median_ms=-1), "timing.candidate.median_ms"),
    (lambda r: r.update(reason=["not", "one", "line"]), "reason"),
])
def test_result_is_schema_validated(client, queued_run, agent_and_token, mutate, problem):
    run, kwargs = queued_run
    _, token = agent_and_token
    body = passed_result()
    mutate(body)
    response = client.post(kwargs["result_url"], body, content_type="application/json",
                           headers=agent_headers(token, kwargs["job_secret"]))
    assert response.status_code == 422
    assert problem in response.json()["detail"]
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED


def test_the_reason_of_a_verdict_is_stored_and_shown_to_who_sees_the_logs(client, queued_run, agent_and_token,
                                                                         alice, bob):
    run, kwargs = queued_run
    _, token = agent_and_token
    reason = "trial 1: output 0: max abs error 3.200e-01 > atol"
    body = {**passed_result(), "status": "wrong_answer", "reason": reason}
    body["correctness"]["passed"] = False
    response = client.post(kwargs["result_url"], body, content_type="application/json",
                           headers=agent_headers(token, kwargs["job_secret"]))
    assert response.status_code == 200
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


def test_start_marks_running_and_refuses_finished_runs(client, queued_run, agent_and_token):
    run, kwargs = queued_run
    agent, token = agent_and_token
    headers = agent_headers(token, kwargs["job_secret"])
    assert client.post(kwargs["start_url"], {"agent": "x"}, content_type="application/json", headers=headers).status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.agent == agent
    client.post(kwargs["result_url"], passed_result(), content_type="application/json", headers=headers)
    again = client.post(kwargs["start_url"], {}, content_type="application/json", headers=headers)
    assert again.status_code == 409


def test_internal_error_is_retried_with_a_new_secret(client, queued_run, agent_and_token, settings,
                                                    django_capture_on_commit_callbacks):
    run, kwargs = queued_run
    _, token = agent_and_token
    settings.RUN_MAX_ATTEMPTS = 2
    body = {**passed_result(), "status": "internal_error", "timing": None}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(kwargs["result_url"], body, content_type="application/json",
                               headers=agent_headers(token, kwargs["job_secret"]))
    assert response.status_code == 200 and "requeued" in response.json()["detail"]
    run.refresh_from_db()
    assert (run.status, run.attempts, run.verdict) == ("queued", 2, "")
    fresh = job_kwargs(run)
    assert fresh["job_secret"] != kwargs["job_secret"]
    # The old attempt's secret no longer counts.
    stale = client.post(kwargs["result_url"], passed_result(), content_type="application/json",
                        headers=agent_headers(token, kwargs["job_secret"]))
    assert stale.status_code == 403
    final = client.post(kwargs["result_url"], body, content_type="application/json",
                        headers=agent_headers(token, fresh["job_secret"]))
    assert final.status_code == 200
    run.refresh_from_db()
    assert (run.status, run.verdict) == ("done", "internal_error")


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
