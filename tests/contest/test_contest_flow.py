"""The whole contest with real parts, as seeds 000/001 run it: register and accept the agreement, open
an issue, submit by upload and by pull request (a local bare repository), a real agent judges, the
PR host's API receives the bot's comment, an organizer accepts with rubric points, the standing
changes, and the audit trail holds every step."""
import csv
import io
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Contestant, GpuType, Issue, Season, Standing, Submission
from submissions.services import accounts, reviewing
from tests.conftest import EXAMPLES
from live_platform.agents import wait_for_runs
from tests.site.pr_host import BareRepository, RecordingApi, local_hosts, run_site_worker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api():
    server = RecordingApi()
    yield server
    server.close()


def example_files(name):
    return {p.name: p.read_bytes() for p in sorted((EXAMPLES / name).iterdir()) if p.is_file()}


def wait_for(predicate, what, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} did not happen within {timeout} s")


def test_register_issue_upload_pr_judge_comment_accept_standing_audit(
        client, live_server, queue_prefix, start_agent, settings, tmp_path, api, django_capture_on_commit_callbacks):
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-org-123", is_staff=True)
    _, agent_token = accounts.create_agent("contest-agent", GpuType.objects.all())
    local_hosts(settings, tmp_path / "git", api.url)
    agent = start_agent(live_server.url, agent_token, f"{queue_prefix}cpu")

    # A contestant registers (accepting the agreement), links a Gitee handle and opens an issue.
    assert client.post("/accounts/register/", {
        "username": "carol", "password1": "A-long-pass-42", "password2": "A-long-pass-42",
        "display_name": "Carol", "accept_agreement": "on"}).status_code == 302
    carol = Contestant.objects.get(user__username="carol")
    client.post("/account/", {"display_name": "Carol", "gitee_handle": "carol-gitee"})
    client.post("/issues/new/", {"season": season.pk, "title": "ReLU", "operator": "torch.relu",
                                 "framework": "pytorch", "level": "1"})
    issue = Issue.objects.get(author=carol)

    # v1 by upload (a wrong kernel), v2 by pull request (the right one).
    uploads = [SimpleUploadedFile(n, d) for n, d in example_files("relu-cpu-wrong").items()]
    assert client.post("/submit/", {"issue": issue.pk, "files": uploads}).status_code == 302
    repo = BareRepository(tmp_path / "git", "ccf-ai-infra", "GPUCodeForces")
    commit = repo.open_pull_request(3, {f"S1/{issue.code}/{n}": d for n, d in example_files("relu-cpu").items()})
    pr_url = "https://gitee.com/ccf-ai-infra/GPUCodeForces/pulls/3"
    assert client.post("/submit/pull-request/", {"pr_url": pr_url}).status_code == 302
    uploaded, pulled = Submission.objects.filter(contestant=carol).order_by("pk")
    assert (pulled.source, pulled.pr_commit) == ("pr", commit)

    _, token = accounts.create_api_token(carol)
    wrong = wait_for_runs(live_server.url, token, uploaded.pk, agent)
    right = wait_for_runs(live_server.url, token, pulled.pk, agent)
    assert [r["verdict"] for r in wrong["runs"]] == ["wrong_answer"]
    assert [r["verdict"] for r in right["runs"]] == ["passed"], right["runs"][0]["result"]["logs"]

    # The bot replied on the pull request, once, with the verdict table: from the site's own queue,
    # which a real RQ worker drains here (the agent's result request never waits for the host).
    assert api.requests == []
    run_site_worker(django_capture_on_commit_callbacks)
    wait_for(lambda: api.requests, "the PR comment")
    (comment,) = api.requests
    assert comment["path"] == "/repos/ccf-ai-infra/GPUCodeForces/pulls/3/comments"
    assert f"S1/{issue.code}" in comment["json"]["body"] and "| CPU | Passed |" in comment["json"]["body"]

    # The organizer reviews: prefilled from the run, plus the LLM bonus by hand (an override with a reason).
    client.force_login(organizer.user)
    page = client.get(f"/organizer/submissions/{pulled.pk}/").content.decode()
    assert 'name="points_execution_time" value="5.0"' in page
    standing_before = Standing.objects.get(season=season, contestant=carol)
    assert standing_before.accepted_count == 0 and standing_before.submission_count == 2
    points = reviewing.prefill(pulled)
    form = {f"points_{k}": str(v) for k, v in points.items()}
    form.update(points_llm_prompt="5", decision="accepted", reason="clean sample",
                override_reason="prompt judged by hand")
    assert client.post(f"/organizer/submissions/{pulled.pk}/review/", form).status_code == 302

    standing = Standing.objects.get(season=season, contestant=carol)
    base = sum(v for k, v in points.items() if k != "llm_prompt")
    assert (standing.accepted_count, standing.base_score, standing.bonus, standing.rank) == (1, base, 5, 1)
    board = client.get("/api/v1/seasons/S1/leaderboard").json()["rows"]
    assert board[0]["contestant"] == "Carol" and board[0]["accepted_count"] == 1

    # Every step is in the audit trail, shown on the review page and exported.
    page = client.get(f"/organizer/submissions/{pulled.pk}/").content.decode()
    for action in ("run.verdict", "pr.commented", "review.accepted", "score.overridden", "standing.changed"):
        assert action in page
    export = b"".join(client.get("/organizer/export/audit.csv").streaming_content).decode()
    actions = [(row["action"], row["object_type"]) for row in csv.DictReader(io.StringIO(export))]
    for step in [("agreement.accepted", "contestant"), ("run.verdict", "run"), ("pr.commented", "submission"),
                 ("review.accepted", "submission"), ("score.overridden", "submission"),
                 ("standing.changed", "standing")]:
        assert step in actions, step
    assert actions.count(("run.verdict", "run")) == 2
