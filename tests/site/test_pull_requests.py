"""Pull-request intake with real git (a local bare repository with pull refs), webhooks with real
signatures, and the bot's comment received by a real local HTTP server."""
import base64
import hashlib
import hmac
import json

import pytest

from submissions.models import AuditEntry, Contestant, Submission
from submissions.pull_requests import PullRequestError, parse_pr_url
from submissions.services import pr_intake, submitting
from tests.site.bundle_files import CUDACODE, TORCHCODE
from tests.site.judging_helpers import passed_result, report_all
from tests.site.pr_host import BareRepository, RecordingApi, local_hosts, run_site_worker


@pytest.fixture
def api():
    server = RecordingApi()
    yield server
    server.close()


@pytest.fixture
def host(settings, tmp_path, api):
    local_hosts(settings, tmp_path / "git", api.url)
    return BareRepository(tmp_path / "git", "ccf-ai-infra", "GPUCodeForces")


@pytest.fixture
def issue(season, alice):
    alice.gitee_handle = "alice-gitee"
    alice.github_handle = "alice-gh"
    alice.save()
    return submitting.open_issue(season, alice, title="ReLU")


def bundle_in(issue, extra=b""):
    folder = f"S1/{issue.code}/"
    return {folder + "torchcode.py": TORCHCODE, folder + "cudacode.py": CUDACODE + extra}


GITEE_PR = "https://gitee.com/ccf-ai-infra/GPUCodeForces/pulls/{n}"


def test_pr_urls_of_the_three_hosts_and_clear_errors(settings):
    assert parse_pr_url("https://gitee.com/ccf-ai-infra/GPUCodeForces/pulls/12").ref == "refs/pull/12/head"
    gh = parse_pr_url("https://github.com/metax/kernels/pull/7/")
    assert (gh.host, gh.owner, gh.repo, gh.number) == ("github", "metax", "kernels", 7)
    assert parse_pr_url("https://www.gitlink.org.cn/ccf-ai-infra/GPUCodeForces/pulls/3").host == "gitlink"
    with pytest.raises(PullRequestError, match="unknown pull-request host.*known hosts: github"):
        parse_pr_url("https://bitbucket.org/a/b/pull-requests/1")
    with pytest.raises(PullRequestError, match="not a pull request URL of gitee"):
        parse_pr_url("https://gitee.com/ccf-ai-infra/GPUCodeForces/issues/1")


def test_pasted_pr_url_fetches_the_issue_folder_and_records_url_and_commit(
        client, host, issue, alice, django_capture_on_commit_callbacks):
    sha = host.open_pull_request(5, dict(bundle_in(issue), **{"S1/OTHERX/readme.md": b"not mine"}))
    client.force_login(alice.user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/submit/pull-request/", {"pr_url": GITEE_PR.format(n=5)})
    assert response.status_code == 302, response.content.decode()
    submission = Submission.objects.get()
    assert (submission.source, submission.pr_url, submission.pr_commit) == ("pr", GITEE_PR.format(n=5), sha)
    assert sorted(submission.files.values_list("path", flat=True)) == ["cudacode.py", "torchcode.py"]
    assert submission.runs.count() == 2
    again = client.post("/submit/pull-request/", {"pr_url": GITEE_PR.format(n=5)})
    assert "already submitted" in again.content.decode() and Submission.objects.count() == 1


def test_a_new_commit_submits_only_the_folders_it_changed(client, host, issue, season, alice,
                                                          django_capture_on_commit_callbacks):
    gelu = submitting.open_issue(season, alice, title="GELU")
    with django_capture_on_commit_callbacks(execute=True):
        host.open_pull_request(5, dict(bundle_in(issue), **bundle_in(gelu, extra=b"# GELU's own kernel\n")))
        first = pr_intake.submit_pull_request(alice, GITEE_PR.format(n=5))
    assert sorted(s.issue.code for s in first) == sorted([issue.code, gelu.code])

    # the next commit changes the GELU folder alone: the ReLU folder is exactly its earlier submission
    with django_capture_on_commit_callbacks(execute=True):
        sha = host.open_pull_request(5, dict(bundle_in(issue), **bundle_in(gelu, extra=b"# GELU's own kernel\n# faster\n")))
        (second,) = pr_intake.submit_pull_request(alice, GITEE_PR.format(n=5))
    assert (second.issue, second.pr_commit) == (gelu, sha) and Submission.objects.count() == 3

    host.open_pull_request(5, dict(bundle_in(issue), **bundle_in(gelu, extra=b"# GELU's own kernel\n# faster\n")))  # changed nothing
    client.force_login(alice.user)
    again = client.post("/submit/pull-request/", {"pr_url": GITEE_PR.format(n=5)}, headers={"Accept-Language": "en"})
    assert "Nothing new to judge" in again.content.decode() and Submission.objects.count() == 3


def test_pr_errors_are_clear(client, host, issue, alice, settings):
    host.open_pull_request(6, {"S1/ZZZZZZ/torchcode.py": TORCHCODE})
    client.force_login(alice.user)

    def error(url, **data):
        page = client.post("/submit/pull-request/", dict(pr_url=url, **data)).content.decode()
        return page

    assert "no folder of your issues" in error(GITEE_PR.format(n=6))
    assert f"no folder S1/{issue.code}/" in error(GITEE_PR.format(n=6), issue=issue.pk)
    assert "pull request 99 does not exist" in error(GITEE_PR.format(n=99))
    assert "is private or does not exist" in error("https://gitee.com/someone/private-repo/pulls/1")
    assert "unknown pull-request host" in error("https://example.com/a/b/pull/1")
    host.open_pull_request(7, {f"S1/{issue.code}/torchcode.py": TORCHCODE})
    assert "the bundle has no candidate" in error(GITEE_PR.format(n=7)).replace("&#x27;", "'")
    settings.BUNDLE_MAX_FILES = 3
    host.open_pull_request(13, {f"S1/{issue.code}/{n}.py": TORCHCODE for n in range(4)})
    assert f"S1/{issue.code}/ has 4 files; the limit is 3" in error(GITEE_PR.format(n=13))
    settings.BUNDLE_MAX_FILE_BYTES = 100
    assert "bytes; the limit is 100 bytes a file" in error(GITEE_PR.format(n=13))
    settings.PR_FETCH_TIMEOUT_SECONDS = 0.001
    assert "timed out after" in error(GITEE_PR.format(n=6))
    assert not Submission.objects.exists()


def github_headers(body, secret="hook-secret", event="pull_request"):
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": signature, "X-GitHub-Event": event}


def test_github_webhook_queues_the_intake_and_a_site_worker_submits(client, host, issue,
                                                                    django_capture_on_commit_callbacks):
    host.open_pull_request(8, bundle_in(issue))
    pr_url = "https://github.com/ccf-ai-infra/GPUCodeForces/pull/8"
    body = json.dumps({"action": "opened", "pull_request": {"html_url": pr_url, "user": {"login": "alice-gh"}}}).encode()
    forged = client.post("/webhooks/github/", body, content_type="application/json",
                         headers=github_headers(body, secret="wrong"))
    assert forged.status_code == 403 and "X-Hub-Signature-256" in forged.json()["detail"]
    accepted = client.post("/webhooks/github/", body, content_type="application/json", headers=github_headers(body))
    assert accepted.status_code == 202 and accepted.json()["queued"] is True
    assert not Submission.objects.exists()  # the git fetch happens in the worker, not in the host's request
    assert run_site_worker(django_capture_on_commit_callbacks) == 1
    (submission,) = Submission.objects.all()
    assert submission.pr_url == pr_url and submission.runs.count() == 2
    client.post("/webhooks/github/", body, content_type="application/json", headers=github_headers(body))
    run_site_worker(django_capture_on_commit_callbacks)
    assert Submission.objects.count() == 1  # a redelivery of the same commit changes nothing
    closed = json.dumps({"action": "closed", "pull_request": {"html_url": pr_url}}).encode()
    assert "ignored" in client.post("/webhooks/github/", closed, content_type="application/json",
                                    headers=github_headers(closed)).json()["detail"]
    stranger = json.dumps({"action": "opened", "pull_request": {"html_url": pr_url, "user": {"login": "mallory"}}}).encode()
    assert "no contestant has the github handle 'mallory'" in client.post(
        "/webhooks/github/", stranger, content_type="application/json", headers=github_headers(stranger)).json()["detail"]


def test_gitee_webhook_accepts_its_signature_or_password(client, host, issue, django_capture_on_commit_callbacks):
    host.open_pull_request(9, bundle_in(issue))
    body = json.dumps({"action": "open", "pull_request": {"html_url": GITEE_PR.format(n=9),
                                                          "user": {"login": "alice-gitee"}}}).encode()
    timestamp = "1700000000000"
    signed = base64.b64encode(hmac.new(b"hook-secret", f"{timestamp}\nhook-secret".encode(), hashlib.sha256).digest())
    assert client.post("/webhooks/gitee/", body, content_type="application/json",
                       headers={"X-Gitee-Token": "nope", "X-Gitee-Timestamp": timestamp}).status_code == 403
    response = client.post("/webhooks/gitee/", body, content_type="application/json",
                           headers={"X-Gitee-Token": signed.decode(), "X-Gitee-Timestamp": timestamp})
    assert response.status_code == 202
    run_site_worker(django_capture_on_commit_callbacks)
    host.open_pull_request(9, bundle_in(issue, extra=b"# v2\n"))
    update = json.loads(body) | {"action": "update"}
    response = client.post("/webhooks/gitee/", json.dumps(update), content_type="application/json",
                           headers={"X-Gitee-Token": "hook-secret"})
    assert response.status_code == 202
    run_site_worker(django_capture_on_commit_callbacks)
    assert Submission.objects.count() == 2
    assert client.post("/webhooks/gitee/", b"{", content_type="application/json",
                       headers={"X-Gitee-Token": "hook-secret"}).status_code == 422


def test_a_webhook_pr_that_cannot_be_submitted_gets_the_reason_as_a_comment(
        client, host, api, issue, django_capture_on_commit_callbacks):
    host.open_pull_request(12, {"S1/ZZZZZZ/torchcode.py": TORCHCODE})
    body = json.dumps({"action": "open", "pull_request": {"html_url": GITEE_PR.format(n=12),
                                                          "user": {"login": "alice-gitee"}}}).encode()
    assert client.post("/webhooks/gitee/", body, content_type="application/json",
                       headers={"X-Gitee-Token": "hook-secret"}).status_code == 202
    run_site_worker(django_capture_on_commit_callbacks)
    assert not Submission.objects.exists()
    (comment,) = api.requests
    assert "could not take this pull request: the pull request has no folder of your issues" in comment["json"]["body"]
    assert AuditEntry.objects.filter(action="pr.refused").exists()


def test_the_bot_comments_the_verdict_table_once_every_run_is_done(
        host, api, issue, alice, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    host.open_pull_request(10, bundle_in(issue))
    with django_capture_on_commit_callbacks(execute=True):
        (submission,) = pr_intake.submit_pull_request(alice, GITEE_PR.format(n=10))
    cpu, c500 = submission.runs.order_by("gpu_type__slug")
    with django_capture_on_commit_callbacks(execute=True):
        report_all(submission, agent, passed_result(speedup=2.5))
    assert not api.requests  # the site's worker posts it, not the agent's result request
    assert run_site_worker(django_capture_on_commit_callbacks) == 1
    (comment,) = api.requests
    assert comment["path"] == "/repos/ccf-ai-infra/GPUCodeForces/pulls/10/comments"
    assert comment["json"]["access_token"] == "bot-token"
    table = comment["json"]["body"]
    assert f"S1/{issue.code}" in table and "| CPU | Passed | 2.0000 | 0.8000 | 2.50× |" in table
    assert "| MetaX C500 | Passed |" in table
    assert AuditEntry.objects.filter(action="pr.commented", object_id=str(submission.pk)).exists()


def test_api_submits_a_pull_request_with_a_personal_token(client, host, issue, alice, bob,
                                                          django_capture_on_commit_callbacks):
    from submissions.services import accounts

    host.open_pull_request(11, bundle_in(issue))
    _, token = accounts.create_api_token(alice)
    _, bob_token = accounts.create_api_token(bob)
    url = "/api/v1/pull-requests"
    body = {"pr_url": GITEE_PR.format(n=11), "issue": issue.code}
    assert client.post(url, body, content_type="application/json",
                       headers={"Authorization": f"Bearer {bob_token}"}).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, body, content_type="application/json", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.content
    (created,) = response.json()
    assert created["source"] == "pr" and created["files"] == ["cudacode.py", "torchcode.py"]
    bad = client.post(url, {"pr_url": "https://gitee.com/x/y/pulls/1"}, content_type="application/json",
                      headers={"Authorization": f"Bearer {token}"})
    assert bad.status_code == 400 and "private or does not exist" in bad.json()["detail"]


def test_a_webhook_names_nobody_when_several_contestants_have_its_authors_handle(client, host, issue, bob):
    """Two accounts that gave the same handle before the profile refused it: the site cannot tell whose
    pull request it is, so it submits it for neither (an organizer gives the handle back to its owner)."""
    Contestant.objects.filter(pk=bob.pk).update(github_handle="ALICE-GH")
    pr_url = "https://github.com/ccf-ai-infra/GPUCodeForces/pull/8"
    body = json.dumps({"action": "opened", "pull_request": {"html_url": pr_url, "user": {"login": "alice-gh"}}}).encode()
    response = client.post("/webhooks/github/", body, content_type="application/json", headers=github_headers(body))
    assert response.status_code == 200 and response.json()["queued"] is False
    assert "several contestants have the github handle 'alice-gh'" in response.json()["detail"]
