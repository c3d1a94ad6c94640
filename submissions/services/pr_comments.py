"""The bot's reply on a pull request: the verdict table, posted when every run is done."""
import json
import logging
import urllib.error
import urllib.request

from django.conf import settings
from django.db import transaction

from submissions import freeze_reads, queueing, selectors
from submissions.models import AuditEntry, Run, RunStatus
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


class Delivery:
    """What one POST to the host gave: the HTTP status (None when no answer came) and the error."""

    def __init__(self, status=None, error=""):
        self.status, self.error = status, error

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300

    @property
    def worth_retrying(self):
        """No answer, a 5xx, 408 or 429 may pass; another 4xx (bad token, no such PR) will not."""
        return self.status is None or self.status >= 500 or self.status in (408, 429)

    def describe(self):
        return f"HTTP {self.status}" + (f" ({self.error})" if self.error else "") if self.status else self.error


def _send(pr, body):
    try:
        with urllib.request.urlopen(_request(pr, body), timeout=settings.PR_COMMENT_TIMEOUT_SECONDS) as response:
            return Delivery(response.status)
    except urllib.error.HTTPError as exc:
        return Delivery(exc.code, str(exc.reason)[:200])
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        return Delivery(None, str(getattr(exc, "reason", exc))[:200] or type(exc).__name__)


def _can_comment(pr):
    return bool(pr.config.get("api") and pr.config.get("token"))


def _post(pr, body, subject):
    """POST a comment once; the outcome is kept in the audit trail of `subject`. Returns the status or None."""
    if not _can_comment(pr):
        return None
    delivery = _send(pr, body)
    if not delivery.ok:
        log.warning("commenting on %s failed: %s", pr.url, delivery.describe())
        audit.record("pr.comment_failed", subject, actor_label="pr-bot", reason=f"{pr.url}: {delivery.describe()}")
        return None
    audit.record("pr.commented", subject, actor_label="pr-bot", after={"url": pr.url, "status": delivery.status})
    return delivery.status


def post_refusal(pr, reason, contestant):
    """Tell the PR why it could not be submitted (a webhook has no one else to tell)."""
    body = f"**GPU CodeForces** could not take this pull request: {reason}"
    return _post(pr, body, contestant)


# ---- the verdict table, from the site's own queue ------------------------------------------
# A judged PR's comment is a job of the site worker (never inside the agent's result request, so a
# slow host holds no agent), retried with exponential back-off through RQ's scheduler (the worker
# runs `--with-scheduler`), every attempt audited on the submission. The audit is also the memory
# that makes a repeated job harmless: the table of a given set of runs is posted once.

JOB_FUNCTION = "submissions.jobs.post_pr_verdicts"


def queue_verdicts(submission_id, attempt=1, delay_s=0):
    queueing.enqueue_site_job(JOB_FUNCTION, kwargs={"submission_id": submission_id, "attempt": attempt},
                              description=f"PR comment for submission {submission_id}, attempt {attempt}",
                              delay_s=delay_s)


def post_held_verdicts(season, frozen_since):
    """After a thaw: queue the tables the freeze held, of the season's PR submissions with a run
    finished since `frozen_since` (a table posted before it is not posted again: _already_posted)."""
    ids = (Run.objects.filter(submission__issue__season=season, status=RunStatus.DONE, finished_at__gt=frozen_since)
           .exclude(submission__pr_url="").values_list("submission_id", flat=True).distinct())
    for submission_id in sorted(set(ids)):
        transaction.on_commit(lambda pk=submission_id: queue_verdicts(pk))


def retry_delay_s(attempt):
    """Seconds before attempt `attempt + 1`: the base, doubled after each failure."""
    return settings.PR_COMMENT_RETRY_SECONDS * 2 ** (attempt - 1)


def runs_key(runs):
    """Which verdicts a table shows: a rejudge's new runs make a new table, a repeated job does not."""
    return ",".join(str(run.pk) for run in sorted(runs, key=lambda r: r.pk))


def _already_posted(submission, key):
    return AuditEntry.objects.filter(action="pr.commented", object_type="submission", object_id=str(submission.pk),
                                     after__runs=key).exists()


def deliver_verdicts(submission_id, attempt=1):
    """Post the verdict table of a judged PR submission (attempt `attempt` of PR_COMMENT_ATTEMPTS).
    Returns what happened: "posted", "already posted", "retrying", "gave up" or "nothing to post"."""
    submission = selectors.submission_with_runs(submission_id)
    if submission is None or not submission.pr_url:
        return "nothing to post"
    try:
        pr = parse_pr_url(submission.pr_url)
    except PullRequestError as exc:
        audit.record("pr.comment_gave_up", submission, actor_label="pr-bot", reason=str(exc))
        return "gave up"
    runs = selectors.latest_runs(submission)
    if not _can_comment(pr) or any(run.status != RunStatus.DONE for run in runs):
        return "nothing to post"  # no bot on this host; or a rejudge is running, whose end queues its own
    since = freeze_reads.frozen_at(submission.issue.season)
    if any(freeze_reads.is_hidden(run, since) for run in runs):
        return "held until the thaw"  # a PR is public: the thaw posts it (post_held_verdicts)
    key = runs_key(runs)
    # One job per submission at a time (a redelivered job must not post beside the first one).
    with queueing.site_connection().lock(f"gpucf:{settings.SITE_QUEUE_NAME}:pr-comment:{submission.pk}",
                                         timeout=settings.PR_COMMENT_TIMEOUT_SECONDS + 60,
                                         blocking_timeout=settings.PR_COMMENT_TIMEOUT_SECONDS + 60):
        if _already_posted(submission, key):
            return "already posted"
        delivery = _send(pr, verdict_table(submission, settings.SITE_URL.rstrip("/")))
        outcome = {"url": pr.url, "status": delivery.status, "runs": key, "attempt": attempt}
        if delivery.ok:
            audit.record("pr.commented", submission, actor_label="pr-bot", after=outcome)
            return "posted"
    log.warning("commenting on %s failed (attempt %s): %s", pr.url, attempt, delivery.describe())
    last = attempt >= settings.PR_COMMENT_ATTEMPTS or not delivery.worth_retrying
    next_note = "" if last else f"; attempt {attempt + 1} in {retry_delay_s(attempt)} s"
    audit.record("pr.comment_failed", submission, actor_label="pr-bot", after=outcome | {"error": delivery.error},
                 reason=f"{pr.url}: {delivery.describe()}; attempt {attempt} of {settings.PR_COMMENT_ATTEMPTS}{next_note}")
    if last:
        why = "the host refused it" if not delivery.worth_retrying else f"{attempt} attempts failed"
        audit.record("pr.comment_gave_up", submission, actor_label="pr-bot", after=outcome,
                     reason=f"{pr.url}: {why}; the last: {delivery.describe()}")
        return "gave up"
    queue_verdicts(submission.pk, attempt + 1, delay_s=retry_delay_s(attempt))
    return "retrying"
