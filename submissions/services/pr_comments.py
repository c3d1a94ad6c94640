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


def post_verdicts(submission):
    """Post the table to the PR; returns the HTTP status, or None when the host has no API or token."""
    try:
        pr = parse_pr_url(submission.pr_url)
    except PullRequestError as exc:
        audit.record("pr.comment_failed", submission, actor_label="pr-bot", reason=str(exc))
        return None
    if not (pr.config.get("api") and pr.config.get("token")):
        return None
    request = _request(pr, verdict_table(submission, settings.SITE_URL.rstrip("/")))
    try:
        with urllib.request.urlopen(request, timeout=settings.PR_COMMENT_TIMEOUT_SECONDS) as response:
            status = response.status
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        log.warning("commenting on %s failed: %s", pr.url, exc)
        audit.record("pr.comment_failed", submission, actor_label="pr-bot", reason=f"{pr.url}: {exc}")
        return None
    audit.record("pr.commented", submission, actor_label="pr-bot", after={"url": pr.url, "status": status})
    return status


def post_verdicts_by_id(submission_id):
    submission = selectors.submission_with_runs(submission_id)
    if submission is not None and submission.pr_url:
        post_verdicts(submission)
