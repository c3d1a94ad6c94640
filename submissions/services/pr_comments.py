"""The bot's reply on a pull request: the verdict table, posted when every run is done."""
import json
import logging
import urllib.error
import urllib.request

from django.conf import settings

from submissions import selectors
from submissions.pull_requests import PullRequestError, parse_pr_url
from submissions.services import audit

log = logging.getLogger(__name__)


def verdict_table(submission, site_url):
    lines = [f"**GPU CodeForces** judged `{submission.issue.season.code}/{submission.issue.code}` at "
             f"`{submission.pr_commit[:10]}` (submission [#{submission.pk}]({site_url}/submissions/{submission.pk}/)):",
             "", "| GPU | verdict | reference ms | candidate ms | speedup |", "| --- | --- | ---: | ---: | ---: |"]
    for run in selectors.latest_runs(submission):
        def ms(value):
            return f"{value:.4f}" if value is not None else "—"
        speedup = f"{run.speedup:.2f}×" if run.speedup else "—"
        lines.append(f"| {run.gpu_type.name} | {run.get_verdict_display()} | {ms(run.reference_median_ms)} | "
                     f"{ms(run.candidate_median_ms)} | {speedup} |")
    lines += ["", "An organizer reviews it next; passing is needed for the review."]
    return "\n".join(lines)


def _request(pr, body):
    config = pr.config
    url = config["api"].rstrip("/") + config["comment_path"].format(owner=pr.owner, repo=pr.repo, number=pr.number)
    payload = {"body": body}
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "gpu-codeforces-bot"}
    if pr.host == "gitee":
        payload["access_token"] = config["token"]  # Gitee's v5 API takes the token in the body
    else:
        headers["Authorization"] = f"token {config['token']}"
    return urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")


def _post(pr, body, subject):
    """POST a comment; the outcome is kept in the audit trail of `subject`. Returns the status or None."""
    if not (pr.config.get("api") and pr.config.get("token")):
        return None
    try:
        with urllib.request.urlopen(_request(pr, body), timeout=settings.PR_COMMENT_TIMEOUT_SECONDS) as response:
            status = response.status
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        log.warning("commenting on %s failed: %s", pr.url, exc)
        audit.record("pr.comment_failed", subject, actor_label="pr-bot", reason=f"{pr.url}: {exc}")
        return None
    audit.record("pr.commented", subject, actor_label="pr-bot", after={"url": pr.url, "status": status})
    return status


def post_verdicts(submission):
    """Post the verdict table to the PR; returns the HTTP status, or None when the host has no API or token."""
    try:
        pr = parse_pr_url(submission.pr_url)
    except PullRequestError as exc:
        audit.record("pr.comment_failed", submission, actor_label="pr-bot", reason=str(exc))
        return None
    return _post(pr, verdict_table(submission, settings.SITE_URL.rstrip("/")), submission)


def post_refusal(pr, reason, contestant):
    """Tell the PR why it could not be submitted (a webhook has no one else to tell)."""
    body = f"**GPU CodeForces** could not take this pull request: {reason}"
    return _post(pr, body, contestant)


def post_verdicts_by_id(submission_id):
    submission = selectors.submission_with_runs(submission_id)
    if submission is not None and submission.pr_url:
        post_verdicts(submission)
