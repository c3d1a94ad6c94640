"""What a request body must look like, as the API enforces it and as its OpenAPI document says: every agent
endpoint refuses a body that is not a JSON object of the documented shape with a 422 (and changes nothing),
and each constraint the code enforces is declared in the document. Django's test client, real agent and
contestant tokens, real database and Redis."""
import json
import re

import pytest

from submissions.models import SUBMISSION_NOTE_MAX_CHARS, Agent, AgentWorker, DatasetExport, Run, RunStatus
from submissions.services import accounts
from tests.site.test_agent_api import agent_headers, passed_result, post_result, queued_run, started  # noqa: F401
from tests.site.test_benchmark_runs import bench_result

NOT_OBJECTS = [[None, None], [], None, "heartbeat", 7, 1.5, True]
BAD_HEARTBEATS = [
    {"worker": ["host-gpu0"]},
    {"worker": "host-gpu0"},
    {"worker": {"name": "host-gpu0", "gpu": 5}},
    {"worker": {"name": "host-gpu0", "gpu": "NVIDIA H100"}},
    {"worker": {"name": "host-gpu0", "gpu": [0]}},
    {"worker": {"name": ["host-gpu0"]}},
    {"worker": {"name": "../etc"}},
    {"worker": {"name": "host-gpu0\n"}},
    {"worker": {"name": "w" * 101}},
    {"judging": [5]},
    {"judging": ["run 1"]},
    {"judging": [[1, 1]]},
    {"judging": {"run_id": 1, "attempt": 1}},
    {"abandoned": [None]},
    {"inventory": []},
    {"inventory": "gpus"},
    {"versions": ["2.4"]},
    {"queues": "gpu.cpu"},
    {"queues": [{"name": "gpu.cpu"}]},
]


def post(client, path, body, headers):
    """The body as JSON text (the test client would send a bare string or number unencoded)."""
    return client.post(path, json.dumps(body), content_type="application/json", headers=headers)


def assert_refused_as_invalid(response):
    assert response.status_code == 422, response.content
    answer = response.json()
    assert answer["detail"].startswith("invalid request: ") and isinstance(answer["errors"], list), answer


@pytest.mark.parametrize("body", NOT_OBJECTS + BAD_HEARTBEATS, ids=repr)
def test_a_heartbeat_of_the_wrong_shape_is_a_422_and_records_nothing(client, agent_and_token, body):
    agent, token = agent_and_token
    assert_refused_as_invalid(post(client, "/api/v1/agent/heartbeat", body, agent_headers(token)))
    agent = Agent.objects.get(pk=agent.pk)
    assert agent.last_heartbeat_at is None and agent.queues == [] and not AgentWorker.objects.exists()


def test_a_top_level_array_heartbeat_names_the_shape_it_should_have(client, agent_and_token):
    _, token = agent_and_token
    answer = post(client, "/api/v1/agent/heartbeat", [None, None], agent_headers(token)).json()
    assert answer["detail"] == "invalid request: Input should be a JSON object, not an array"
    nested = post(client, "/api/v1/agent/heartbeat", {"worker": {"name": "w", "gpu": 5}}, agent_headers(token)).json()
    assert nested["detail"] == "invalid request: worker.gpu: Input should be a JSON object, not a number"
    chinese = post(client, "/api/v1/agent/heartbeat", "idle", {**agent_headers(token), "Accept-Language": "zh-CN"})
    assert chinese.status_code == 422 and "输入应为 JSON 对象，而不是字符串" in chinese.json()["detail"]


def test_older_and_newer_heartbeats_still_land(client, agent_and_token):
    """An empty object (every field is optional), an agent before workers, and unknown fields of a newer agent."""
    agent, token = agent_and_token
    for body in ({}, {"queues": ["gpu.cpu"], "inventory": {"gpus": []}, "versions": {"torch": "2.4"}},
                 {"worker": {"name": "host-gpu0", "gpu": None}, "judging": [], "abandoned": [], "power_w": 300}):
        assert post(client, "/api/v1/agent/heartbeat", body, agent_headers(token)).status_code == 200, body
    assert Agent.objects.get(pk=agent.pk).workers.get().name == "host-gpu0"


@pytest.mark.parametrize("body", NOT_OBJECTS + [
    {"attempt": [1]}, {"attempt": {"n": 1}}, {"attempt": 1, "worker": ["host-gpu0"]},
    {"attempt": 1, "worker": "../etc"}, {"attempt": 1, "worker": ""}, {"attempt": 1, "gpu_uuid": {"uuid": "GPU-1"}},
    {"attempt": 1, "harness_version": [1, 0]},
], ids=repr)
def test_a_start_of_the_wrong_shape_is_a_422_and_the_run_stays_queued(client, queued_run, agent_and_token, body):
    run, _ = queued_run
    _, token = agent_and_token
    assert_refused_as_invalid(post(client, f"/api/v1/agent/runs/{run.pk}/start", body, agent_headers(token)))
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.agent is None and not AgentWorker.objects.exists()


@pytest.mark.parametrize("body", NOT_OBJECTS + [
    {"attempt": [1], "stage": "compiling"}, {"attempt": 1, "stage": ["compiling"]}, {"attempt": 1, "stage": None},
    {"attempt": None, "stage": "timing"},
], ids=repr)
def test_a_progress_report_of_the_wrong_shape_is_a_422(client, queued_run, agent_and_token, body):
    run, _ = queued_run
    _, token = agent_and_token
    answer = started(client, run, token)
    assert_refused_as_invalid(post(client, answer["progress_url"], body, agent_headers(token, answer["job_secret"])))
    assert Run.objects.get(pk=run.pk).stage == ""


def _result_with(**changes):
    body = passed_result()
    body.update(changes)
    return body


@pytest.mark.parametrize("body", NOT_OBJECTS + [
    _result_with(logs="compiled"), _result_with(device=["cpu"]), _result_with(timing=[1.0, 2.0]),
    _result_with(flags="noisy"), _result_with(telemetry=[]), _result_with(durations_s="2s"),
    _result_with(correctness={"passed": {"yes": 1}}), _result_with(timing={"candidate": 0.5}),
], ids=lambda body: repr(body)[:60])
def test_a_result_of_the_wrong_shape_is_a_422_and_the_run_waits_for_a_good_one(client, queued_run, agent_and_token,
                                                                              body):
    run, _ = queued_run
    _, token = agent_and_token
    answer = started(client, run, token)
    assert_refused_as_invalid(post(client, answer["result_url"], body, agent_headers(token, answer["job_secret"])))
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    assert post_result(client, answer, token, passed_result()).status_code == 200


@pytest.mark.parametrize("body", NOT_OBJECTS, ids=repr)
def test_a_dataset_export_asked_with_a_body_that_is_not_an_object_is_a_422(client, season, organizer, body):
    _, token = accounts.create_api_token(organizer)
    response = post(client, "/api/v1/seasons/S1/datasets", body, {"Authorization": f"Bearer {token}"})
    assert_refused_as_invalid(response)
    assert not DatasetExport.objects.exists()


def _property(document, schema_name, field):
    """A schema's property, with a nullable one's non-null branch."""
    found = document["components"]["schemas"][schema_name]["properties"][field]
    branches = [b for b in found.get("anyOf", [found]) if b.get("type") != "null"]
    assert len(branches) == 1, found
    return branches[0]


def _matches(pattern, text):
    return re.search(pattern, text) is not None  # JSON Schema's pattern: found anywhere, as `re.search`


def test_the_openapi_document_declares_each_constraint_the_code_enforces(client):
    document = client.get("/api/v1/openapi.json").json()
    checksum = _property(document, "DatasetIn", "checksum")["pattern"]
    assert _matches(checksum, "0" * 64) and _matches(checksum, "ab12" * 16)
    assert not any(_matches(checksum, bad) for bad in ("0" * 63, "0" * 65, "AB12" * 16, "g" * 64, ""))
    kind = _property(document, "DeviceIn", "kind")["pattern"]
    assert _matches(kind, "cpu") and _matches(kind, "cuda")
    assert not any(_matches(kind, bad) for bad in ("gpu", "cudax", "xcpu", "CUDA", ""))
    for schema_name in ("SampleIn", "SampleWeightIn"):
        weight = _property(document, schema_name, "weight")
        assert (weight["minimum"], weight["maximum"]) == (0, 1000), schema_name
    for schema_name, field in (("WorkerIn", "name"), ("StartIn", "worker")):
        pattern = _property(document, schema_name, field)["pattern"]
        for good in ("host-gpu0", "a", "node7.example.org:gpu@3", "A_b-c", "w" * 100):
            assert _matches(pattern, good), (schema_name, good)
        for bad in ("", "../etc", "-host", ".hidden", "w" * 101, "host gpu", "host/gpu"):
            assert not _matches(pattern, bad), (schema_name, bad)
    run_in = document["components"]["schemas"]["BenchmarkRunIn"]["properties"]
    assert run_in["schema"].get("const", (run_in["schema"].get("enum") or [None])[0]) == 1
    assert run_in["complete"].get("const") is True
    reason = _property(document, "SampleWeightIn", "reason")["pattern"]
    assert _matches(reason, " rare ") and not _matches(reason, "  \t")
    title = _property(document, "IssueIn", "title")["pattern"]
    assert _matches(title, "ReLU") and not _matches(title, "   ")
    form = document["paths"]["/api/v1/submissions"]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert form["schema"]["properties"]["note"]["maxLength"] == SUBMISSION_NOTE_MAX_CHARS


def test_a_blank_title_or_reason_or_an_over_long_note_is_a_422_naming_the_field(client, season, alice):
    """Each was refused by a service with a 400; now the schema refuses it, as the document says."""
    _, token = accounts.create_api_token(alice)
    headers = {"Authorization": f"Bearer {token}"}
    blank = post(client, "/api/v1/issues", {"season": "S1", "title": " \t "}, headers)
    assert_refused_as_invalid(blank)
    assert "title: must not be blank" in blank.json()["detail"] and not alice.issues.exists()
    issue = post(client, "/api/v1/issues", {"season": "S1", "title": "ReLU"}, headers).json()["code"]
    long_note = client.post("/api/v1/submissions", {"issue": issue, "note": "n" * (SUBMISSION_NOTE_MAX_CHARS + 1)},
                            headers=headers)
    assert_refused_as_invalid(long_note)
    assert long_note.json()["detail"].endswith("note: a submission's note has at most 2000 characters; this one has 2001")
    _, organizer_token = accounts.create_api_token(accounts.register_contestant("org", "pw-org-123", is_staff=True))
    no_reason = client.put(f"/api/v1/issues/{issue}/weight", json.dumps({"weight": 2, "reason": " "}),
                           content_type="application/json", headers={"Authorization": f"Bearer {organizer_token}"})
    assert_refused_as_invalid(no_reason)
    assert "reason: must not be blank" in no_reason.json()["detail"]


@pytest.mark.parametrize("field, value", [
    ("checksum", "A" * 64), ("checksum", "0" * 63), ("kind", "gpu"), ("kind", "cuda\n"), ("weight", 1000.5),
    ("weight", -1), ("schema", 2),
])
def test_a_benchmark_upload_breaking_a_documented_constraint_is_a_422_naming_it(client, season, alice, field, value):
    body = bench_result()
    where = {"checksum": body["dataset"], "kind": body["device"], "weight": body["samples"][0], "schema": body}[field]
    where[field] = value
    _, token = accounts.create_api_token(alice)
    response = post(client, "/api/v1/benchmark-runs", body, {"Authorization": f"Bearer {token}"})
    assert_refused_as_invalid(response)
    assert f"{field}: " in response.json()["detail"]


@pytest.mark.parametrize("value", [7, "scores", [], None])
def test_a_benchmark_uploads_scores_must_be_an_object(client, season, alice, value):
    body = bench_result()
    body["scores"] = value
    _, token = accounts.create_api_token(alice)
    response = post(client, "/api/v1/benchmark-runs", body, {"Authorization": f"Bearer {token}"})
    assert_refused_as_invalid(response)
    assert "scores" in response.json()["detail"]
