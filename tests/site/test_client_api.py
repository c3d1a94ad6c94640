"""The API the terminal client (gpucf) reads: one's own submissions and issues, whose token it is, the
seasons and their issues, and each run's live progress in the submission JSON. Real database and Redis."""
import pytest

from submissions.models import GpuType, RejudgeScope, RunStage, Season
from submissions.services import accounts, judging, rejudging, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def two_seasons(season):
    """S1 (the shared fixture's, on cpu and c500) and S2, judged on the CPU alone and closed."""
    s2 = Season.objects.create(code="S2", name="Season two", second_judging="off", is_open=False)
    s2.gpu_types.add(GpuType.objects.get(slug="cpu"))
    return season, s2


def test_own_submissions_are_listed_newest_first_by_season_and_page(client, two_seasons, alice, bob,
                                                                     django_capture_on_commit_callbacks):
    s1, s2 = two_seasons
    capture = django_capture_on_commit_callbacks
    s1_issue = submitting.open_issue(s1, alice, title="ReLU")
    first, second = (submit(capture, alice, s1_issue, valid_files(), note=f"v{n}") for n in (1, 2))
    s2.is_open = True
    s2.save()
    s2_submission = submit(capture, alice, submitting.open_issue(s2, alice, title="GELU"), valid_files())
    submit(capture, bob, submitting.open_issue(s1, bob, title="Bob's"), valid_files())
    _, token = accounts.create_api_token(alice)

    everything = client.get("/api/v1/submissions", headers=bearer(token)).json()
    assert everything["total"] == 3 and [row["id"] for row in everything["rows"]] == [
        s2_submission.pk, second.pk, first.pk]
    newest_s1 = client.get("/api/v1/submissions", {"season": "S1", "limit": 1}, headers=bearer(token)).json()
    assert newest_s1["total"] == 2 and [row["id"] for row in newest_s1["rows"]] == [second.pk]
    row = newest_s1["rows"][0]
    assert (row["issue"], row["issue_title"], row["season"], row["note"], row["state"]) == (
        s1_issue.code, "ReLU", "S1", "v2", "judging")
    assert [(r["gpu_type"], r["status"], r["verdict"]) for r in row["runs"]] == [("c500", "queued", ""),
                                                                                ("cpu", "queued", "")]
    older = client.get("/api/v1/submissions", {"season": "S1", "offset": 1}, headers=bearer(token)).json()
    assert [row["id"] for row in older["rows"]] == [first.pk] and older["offset"] == 1
    unknown = client.get("/api/v1/submissions", {"season": "S9"}, headers=bearer(token))
    assert unknown.status_code == 404 and unknown.json()["detail"] == "season S9 does not exist"
    assert client.get("/api/v1/submissions").status_code == 401
    assert client.get("/api/v1/submissions", headers=bearer("not-a-token")).status_code == 401


def test_a_contestant_lists_no_one_elses_submissions_nor_reads_them(client, season, alice, bob,
                                                                   django_capture_on_commit_callbacks):
    alices = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                    valid_files())
    _, bob_token = accounts.create_api_token(bob)
    assert client.get("/api/v1/submissions", headers=bearer(bob_token)).json() == {"total": 0, "offset": 0,
                                                                                   "rows": []}
    assert client.get(f"/api/v1/submissions/{alices.pk}", headers=bearer(bob_token)).status_code == 404
    assert client.get("/api/v1/issues", headers=bearer(bob_token)).json()["rows"] == []


def test_own_issues_say_whether_their_season_takes_submissions(client, two_seasons, alice, bob):
    s1, s2 = two_seasons
    relu = submitting.open_issue(s1, alice, title="ReLU", operator="torch.relu", level=2)
    submitting.open_issue(s1, bob, title="Bob's")
    s2.is_open = True
    s2.save()
    gelu = submitting.open_issue(s2, alice, title="GELU")
    s2.is_open = False
    s2.save()
    _, token = accounts.create_api_token(alice)

    mine = client.get("/api/v1/issues", headers=bearer(token)).json()
    assert mine["total"] == 2
    assert [(i["code"], i["season"], i["season_open"], i["submission_count"]) for i in mine["rows"]] == [
        (gelu.code, "S2", False, 0), (relu.code, "S1", True, 0)]
    in_s1 = client.get("/api/v1/issues", {"season": "S1"}, headers=bearer(token)).json()["rows"]
    assert [(i["code"], i["title"], i["operator"], i["level"]) for i in in_s1] == [(relu.code, "ReLU", "torch.relu", 2)]
    assert client.get("/api/v1/issues", {"season": "S9"}, headers=bearer(token)).status_code == 404
    assert client.get("/api/v1/issues").status_code == 401


def test_the_token_names_its_owner(client, season, alice, organizer):
    _, token = accounts.create_api_token(alice)
    assert client.get("/api/v1/me", headers=bearer(token)).json() == {
        "id": alice.pk, "display_name": "Alice", "affiliation": alice.affiliation, "organizer": False}
    _, organizer_token = accounts.create_api_token(organizer)
    assert client.get("/api/v1/me", headers=bearer(organizer_token)).json()["organizer"] is True
    refused = client.get("/api/v1/me", headers=bearer("wrong"))
    assert refused.status_code == 401 and refused.json()["detail"] == "missing or invalid bearer token"


def test_seasons_and_a_seasons_issues_are_public(client, two_seasons, alice, bob):
    submitting.open_issue(two_seasons[0], alice, title="ReLU")
    submitting.open_issue(two_seasons[0], bob, title="Softmax")
    seasons = client.get("/api/v1/seasons").json()
    by_code = {s["code"]: s for s in seasons}
    assert set(by_code) == {"S1", "S2"}
    assert (by_code["S1"]["open"], by_code["S1"]["ended"], by_code["S1"]["ends_at"]) == (True, False, None)
    assert [g["slug"] for g in by_code["S1"]["gpu_types"]] == ["c500", "cpu"] and by_code["S2"]["open"] is False
    issues = client.get("/api/v1/seasons/S1/issues").json()
    assert issues["total"] == 2 and [(i["title"], i["author"]) for i in issues["rows"]] == [
        ("ReLU", "Alice"), ("Softmax", "Bob")]
    assert client.get("/api/v1/seasons/S1/issues", {"offset": 1}).json()["rows"][0]["title"] == "Softmax"
    assert client.get("/api/v1/seasons/S9/issues").status_code == 404


def test_each_run_shows_its_live_stage_queue_position_and_elapsed_time(client, season, alice, agent_and_token,
                                                                       django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    capture = django_capture_on_commit_callbacks
    submission = submit(capture, alice, submitting.open_issue(season, alice, title="ReLU"), valid_files())
    _, token = accounts.create_api_token(alice)

    def runs():
        body = client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer(token)).json()
        return {run["gpu_type"]: run for run in body["runs"] if run["current"]}

    queued = runs()["cpu"]
    assert (queued["status"], queued["stage"], queued["queue_position"]) == ("queued", None, 1)
    assert isinstance(queued["elapsed_s"], int) and queued["elapsed_s"] >= 0
    cpu_run = submission.runs.get(gpu_type__slug="cpu")
    _, secret = judging.start_run(cpu_run.pk, agent, cpu_run.attempts)
    assert runs()["cpu"]["stage"] is None  # started, no report yet
    judging.record_progress(cpu_run.pk, agent, secret, cpu_run.attempts, RunStage.TIMING)
    running = runs()["cpu"]
    assert (running["status"], running["stage"], running["queue_position"]) == ("running", "timing", None)
    assert running["elapsed_s"] >= 0
    (listed,) = client.get("/api/v1/submissions", headers=bearer(token)).json()["rows"]
    assert [(r["gpu_type"], r["status"], r["stage"]) for r in listed["runs"]] == [("c500", "queued", None),
                                                                                ("cpu", "running", "timing")]
    judging.record_result(cpu_run.pk, agent, secret, passed_result())
    done = runs()["cpu"]
    assert (done["status"], done["stage"], done["elapsed_s"], done["verdict"]) == ("done", None, None, "passed")


def test_a_rejudges_run_is_current_and_the_earlier_one_stays_as_history(client, season, alice, organizer,
                                                                       agent_and_token,
                                                                       django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    capture = django_capture_on_commit_callbacks
    submission = submit(capture, alice, submitting.open_issue(season, alice, title="ReLU"), valid_files())
    report_all(submission, agent, passed_result())
    with capture(execute=True):
        rejudging.rejudge(RejudgeScope.SUBMISSION, submission, organizer.user, "new harness")
    _, token = accounts.create_api_token(alice)
    cpu_runs = [run for run in client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer(token)).json()["runs"]
                if run["gpu_type"] == "cpu"]
    assert [(run["status"], run["current"]) for run in cpu_runs] == [("queued", True), ("done", False)]
    listed = client.get("/api/v1/submissions", headers=bearer(token)).json()["rows"][0]["runs"]
    assert [(run["gpu_type"], run["status"]) for run in listed] == [("c500", "queued"), ("cpu", "queued")]
