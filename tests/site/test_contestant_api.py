"""The contestant side of the API: personal tokens, submitting, reading, the public leaderboard."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.services import reviewing, submitting
from submissions.services.accounts import create_api_token
from tests.site.bundle_files import valid_files, zip_of


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_open_issue_submit_zip_and_read_back(client, season, alice):
    _, token = create_api_token(alice)
    created = client.post("/api/v1/issues", {"season": "S1", "title": "Softmax", "operator": "torch.softmax"},
                          content_type="application/json", headers=bearer(token))
    assert created.status_code == 201
    code = created.json()["code"]
    response = client.post("/api/v1/submissions",
                           {"issue": code, "files": [SimpleUploadedFile("bundle.zip", zip_of(valid_files(), "x/"))]},
                           headers=bearer(token))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["issue"] == code and body["season"] == "S1"
    assert body["files"] == ["cudacode.py", "readme.md", "torchcode.py"]
    assert sorted((r["gpu_type"], r["status"]) for r in body["runs"]) == [("c500", "queued"), ("cpu", "queued")]
    read = client.get(f"/api/v1/submissions/{body['id']}", headers=bearer(token))
    assert read.status_code == 200 and read.json()["bundle_sha256"] == Submission.objects.get().bundle_sha256


@pytest.mark.parametrize("field, value, code_point", [("title", "ReLU evil\u202e", "U+202E"),
                                                      ("title", "Re\u200bLU", "U+200B"),
                                                      ("operator", "torch.relu\u2066", "U+2066")])
def test_an_issue_whose_title_or_operator_holds_a_hidden_character_is_a_400_naming_it(client, season, alice, field,
                                                                                     value, code_point):
    _, token = create_api_token(alice)
    payload = dict({"season": "S1", "title": "ReLU", "operator": "torch.relu"}, **{field: value})
    response = client.post("/api/v1/issues", payload, content_type="application/json", headers=bearer(token))
    assert response.status_code == 400, response.content
    assert response.json()["detail"] == (f"an issue's {field} must not contain invisible or text-direction characters "
                                         f"(found {code_point})")
    assert not alice.issues.exists()


def test_others_cannot_read_a_submission_and_revoked_tokens_fail(client, season, alice, bob):
    from django.utils import timezone

    issue = submitting.open_issue(season, alice, title="ReLU")
    from submissions.bundles import build_bundle

    submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    bob_token_row, bob_token = create_api_token(bob)
    assert client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer(bob_token)).status_code == 404
    bob_token_row.revoked_at = timezone.now()
    bob_token_row.save()
    denied = client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer(bob_token))
    assert denied.status_code == 401 and "token" in denied.json()["detail"]


def test_missing_fields_are_json_422(client, season, alice):
    _, token = create_api_token(alice)
    response = client.post("/api/v1/issues", {"season": "S1"}, content_type="application/json", headers=bearer(token))
    assert response.status_code == 422 and "title" in response.json()["detail"]
    unknown = client.post("/api/v1/issues", {"season": "S9", "title": "x"}, content_type="application/json",
                          headers=bearer(token))
    assert unknown.status_code == 404 and "S9" in unknown.json()["detail"]


def test_public_leaderboard_ranks_by_season_rule(client, season, alice, bob, organizer):
    from submissions.bundles import build_bundle

    for contestant, points in ((alice, {"execution_time": 5}),
                               (bob, {"execution_time": 5, "throughput": 4, "bandwidth": 3, "ground_truth": 2})):
        issue = submitting.open_issue(season, contestant, title=f"{contestant} op")
        submission = submitting.create_submission(contestant, issue, build_bundle(valid_files()))
        reviewing.review_submission(submission, organizer.user, "accepted", rubric=points,
                                    override_reason="scored by hand in this test",
                                    acceptance_override="not judged: the ranking rule alone is tested")
    response = client.get("/api/v1/seasons/S1/leaderboard")
    assert response.status_code == 200
    rows = response.json()["rows"]
    assert [(r["rank"], r["contestant"], r["accepted_count"], r["base_score"]) for r in rows] == [
        (1, "Bob", 1, 14.0), (2, "Alice", 1, 5.0)]
    assert client.get("/api/v1/seasons/S404/leaderboard").status_code == 404


def test_openapi_schema_and_docs_are_served(client, db):
    schema = client.get("/api/v1/openapi.json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/agent/runs/{run_id}/result" in paths and "/api/v1/submissions" in paths
    assert client.get("/api/v1/docs").status_code == 200
