"""The bot's verdict table on a judged pull request, posted by the site's own RQ worker: never inside
the agent's result request, retried with back-off through RQ's scheduler, every attempt audited, once
per set of verdicts. The PR host is a real local HTTP server that can be slow or answer 5xx."""
import pytest

from submissions import queueing
from submissions.models import AuditEntry
from submissions.services import judging, pr_comments, pr_intake, submitting
from tests.site.judging_helpers import hand_out_to_token
from tests.site.judging_helpers import passed_result, report_all
from tests.site.pr_host import (BareRepository, RecordingApi, advance_scheduled_jobs, local_hosts, run_site_worker,
                                scheduled_delays)
from tests.site.test_agent_api import agent_headers
from tests.site.test_agent_api import passed_result as full_result
from tests.site.test_pull_requests import GITEE_PR, bundle_in


@pytest.fixture
def open_host(settings, tmp_path):
    """A PR host answering as told (see RecordingApi); returns (api, bare repository)."""
    servers = []

    def make(**answers):
        api = RecordingApi(**answers)
        servers.append(api)
        local_hosts(settings, tmp_path / "git", api.url)
        return api, BareRepository(tmp_path / "git", "ccf-ai-infra", "GPUCodeForces")

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def pr_submission(open_host, season, alice, django_capture_on_commit_callbacks):
    """Opens a host as told and submits pull request 10 from it; returns (api, submission)."""
    def make(**answers):
        api, repository = open_host(**answers)
        issue = submitting.open_issue(season, alice, title="ReLU")
        repository.open_pull_request(10, bundle_in(issue))
        with django_capture_on_commit_callbacks(execute=True):
            (submission,) = pr_intake.submit_pull_request(alice, GITEE_PR.format(n=10))
        return api, submission
    return make


def audits(submission, action):
    return list(AuditEntry.objects.filter(action=action, object_type="submission", object_id=str(submission.pk))
                .order_by("pk"))


def test_the_agents_result_request_returns_before_a_slow_host_is_asked(
        client, pr_submission, agent_and_token, django_capture_on_commit_callbacks):
    api, submission = pr_submission(delay_s=1.0)
    _, token = agent_and_token
    for run in submission.runs.order_by("pk"):
        hand_out_to_token(run, token)
        started = client.post(f"/api/v1/agent/runs/{run.pk}/start", {"attempt": run.attempts},
                              content_type="application/json", headers=agent_headers(token))
        secret = started.json()["job_secret"]
        with django_capture_on_commit_callbacks(execute=True):
            reported = client.post(f"/api/v1/agent/runs/{run.pk}/result", full_result(),
                                   content_type="application/json", headers=agent_headers(token, secret))
        assert reported.status_code == 200, reported.content
        # The host was not even asked while the agent's request was open.
        assert api.requests == []
    assert queueing.site_queue().count == 1
    assert run_site_worker(django_capture_on_commit_callbacks) == 1
    (comment,) = api.requests
    assert "| CPU | Passed |" in comment["json"]["body"]
    (posted,) = audits(submission, "pr.commented")
    assert posted.after["status"] == 201 and posted.after["attempt"] == 1


def test_a_5xx_is_retried_with_back_off_until_posted_and_a_repeated_job_posts_nothing(
        pr_submission, agent_and_token, settings, django_capture_on_commit_callbacks):
    settings.PR_COMMENT_RETRY_SECONDS = 30
    api, submission = pr_submission(failures=[500, 502])
    with django_capture_on_commit_callbacks(execute=True):
        report_all(submission, agent_and_token[0], passed_result())
    run_site_worker(django_capture_on_commit_callbacks)
    (delay,) = scheduled_delays()
    assert 25 < delay <= 31  # the first back-off
    run_site_worker(django_capture_on_commit_callbacks, with_scheduler=True)
    assert len(api.requests) == 1  # not due yet: the scheduler leaves it waiting
    advance_scheduled_jobs()
    run_site_worker(django_capture_on_commit_callbacks, with_scheduler=True)
    (delay,) = scheduled_delays()
    assert 55 < delay <= 61  # doubled
    advance_scheduled_jobs()
    run_site_worker(django_capture_on_commit_callbacks, with_scheduler=True)
    assert len(api.requests) == 3 and scheduled_delays() == []
    failed = audits(submission, "pr.comment_failed")
    assert [(f.after["status"], f.after["attempt"]) for f in failed] == [(500, 1), (502, 2)]
    assert "HTTP 500" in failed[0].reason and "attempt 2 in 30 s" in failed[0].reason
    (posted,) = audits(submission, "pr.commented")
    assert posted.after["attempt"] == 3

    # The same job again (a redelivery) finds the table posted and posts nothing.
    pr_comments.queue_verdicts(submission.pk)
    pr_comments.queue_verdicts(submission.pk)
    assert run_site_worker(django_capture_on_commit_callbacks) == 2
    assert len(api.requests) == 3 and len(audits(submission, "pr.commented")) == 1


def test_it_gives_up_after_the_last_attempt_and_at_once_on_a_refusal(
        pr_submission, agent_and_token, settings, django_capture_on_commit_callbacks):
    settings.PR_COMMENT_ATTEMPTS = 3
    api, submission = pr_submission(failures=[503, 500, 500, 404])
    with django_capture_on_commit_callbacks(execute=True):
        report_all(submission, agent_and_token[0], passed_result())
    for _ in range(4):
        advance_scheduled_jobs()
        run_site_worker(django_capture_on_commit_callbacks, with_scheduler=True)
    assert len(api.requests) == 3 and scheduled_delays() == [] and queueing.site_queue().count == 0
    assert [f.after["status"] for f in audits(submission, "pr.comment_failed")] == [503, 500, 500]
    (gave_up,) = audits(submission, "pr.comment_gave_up")
    assert "3 attempts failed; the last: HTTP 500" in gave_up.reason
    assert not audits(submission, "pr.commented")

    # A rejudge makes a new table; the host refuses it (404): no use retrying.
    rejudged = judging.create_runs(submission)
    assert rejudged
    with django_capture_on_commit_callbacks(execute=True):
        report_all(submission, agent_and_token[0], passed_result())
    run_site_worker(django_capture_on_commit_callbacks, with_scheduler=True)
    assert len(api.requests) == 4 and scheduled_delays() == []
    assert "the host refused it; the last: HTTP 404" in audits(submission, "pr.comment_gave_up")[-1].reason


def test_a_host_slower_than_the_timeout_counts_as_a_failure(
        pr_submission, agent_and_token, settings, django_capture_on_commit_callbacks):
    settings.PR_COMMENT_TIMEOUT_SECONDS = 0.5
    api, submission = pr_submission(delay_s=2.0)
    with django_capture_on_commit_callbacks(execute=True):
        report_all(submission, agent_and_token[0], passed_result())
    run_site_worker(django_capture_on_commit_callbacks)
    (failed,) = audits(submission, "pr.comment_failed")
    assert failed.after["status"] is None and "timed out" in failed.reason
    assert len(scheduled_delays()) == 1


def test_a_pull_request_judged_during_a_freeze_gets_its_table_at_the_thaw(
        pr_submission, agent_and_token, django_capture_on_commit_callbacks):
    """A PR is public: its verdict table would show a result the frozen board hides."""
    from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard

    api, submission = pr_submission()
    freeze_scoreboard(submission.issue.season, reason="the last hour")
    with django_capture_on_commit_callbacks(execute=True):
        report_all(submission, agent_and_token[0], passed_result())
    run_site_worker(django_capture_on_commit_callbacks)
    assert api.requests == [] and audits(submission, "pr.commented") == []
    with django_capture_on_commit_callbacks(execute=True):
        unfreeze_scoreboard(submission.issue.season, reason="results day")
    assert run_site_worker(django_capture_on_commit_callbacks) == 1
    (comment,) = api.requests
    assert "| CPU | Passed |" in comment["json"]["body"]
    assert len(audits(submission, "pr.commented")) == 1
