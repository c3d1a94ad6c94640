"""Submissions from pull requests: a pasted PR URL or a host's webhook, read with git."""
import base64
import hashlib
import hmac
import json

from django.conf import settings
from django.utils.translation import gettext as _

from submissions import queueing, season_access_reads
from submissions.bundles import BundleError, build_bundle
from submissions.models import Contestant, SubmissionSource
from submissions.pull_requests import FetchedPullRequest, PullRequestError, parse_pr_url
from submissions.services import submitting

HANDLE_FIELDS = {"github": "github_handle", "gitee": "gitee_handle", "gitlink": "gitlink_handle"}


class WebhookRefused(ValueError):
    """The request is not from the host (bad signature or token): answered 403."""


def _folder(issue):
    return f"{issue.season.code}/{issue.code}"


def submit_pull_request(contestant, pr_url, *, issue=None):
    """Create a submission for each of the contestant's issues whose folder the PR head holds
    (or for `issue` alone). A folder already submitted at the same commit is skipped, and so is one whose
    files are exactly those of an earlier submission to its issue (a new commit that changed other folders)."""
    pr = parse_pr_url(pr_url)
    if issue is not None:  # refused before anything is fetched
        submitting.check_access(issue.season, contestant)
    with FetchedPullRequest(pr) as fetched:
        head = fetched.head
        if issue is not None:
            issues = [issue]
            if not head.folder(_folder(issue)):
                raise PullRequestError(_("the pull request has no folder %(folder)s/ at commit %(commit)s")
                                       % {"folder": _folder(issue), "commit": head.commit[:10]})
        else:
            mine = list(submitting.issues_open_to(contestant))
            issues = [i for i in mine if head.folder(_folder(i))]
            if not issues:
                codes = ", ".join(_folder(i) + "/" for i in mine) or _("none yet: open an issue first")
                raise PullRequestError(_("the pull request has no folder of your issues at commit %(commit)s "
                                         "(your folders: %(folders)s)") % {"commit": head.commit[:10], "folders": codes})
            issues = _admitted(issues, contestant)
        created = []
        for each in issues:
            if each.submissions.filter(contestant=contestant, pr_url=pr.url, pr_commit=head.commit).exists():
                continue  # the same commit again (a webhook redelivery): nothing new to judge
            raw = fetched.read_folder(_folder(each))
            try:
                bundle = build_bundle(raw, each.fixed_reference, each.code)
            except BundleError as exc:
                raise PullRequestError(_("%(folder)s/ at %(commit)s: %(errors)s") % {
                    "folder": _folder(each), "commit": head.commit[:10], "errors": "; ".join(exc.errors)})
            try:
                created.append(submitting.create_submission(
                    contestant, each, bundle, source=SubmissionSource.PULL_REQUEST, pr_url=pr.url,
                    pr_commit=head.commit, note=f"pull request {pr.url} at {head.commit[:10]}"))  # stored: not translated
            except submitting.AlreadySubmitted:
                continue  # this folder is unchanged since its last submission: nothing new to judge
        return created


def _admitted(issues, contestant):
    """The issues whose season takes the contestant's submissions; a refusal (a ban, an invite-only
    season) when none does. A folder of a season that refuses them is left out of a PR that has others."""
    refusals = {}
    for issue in issues:
        if issue.season_id not in refusals:
            refusals[issue.season_id] = season_access_reads.refusal(issue.season, contestant)
    admitted = [issue for issue in issues if not refusals[issue.season_id]]
    if not admitted:
        raise submitting.AccessRefused(next(why for why in refusals.values() if why))
    return admitted


# ---- webhooks ----------------------------------------------------------------------------


def _secret(host):
    secret = settings.PR_HOSTS[host].get("webhook_secret", "")
    if not secret:
        raise WebhookRefused(_("webhooks from %(host)s are not enabled (no secret configured)") % {"host": host})
    return secret


def verify_webhook(host, headers, body):
    secret = _secret(host)
    if host == "github":
        expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, headers.get("X-Hub-Signature-256", "")):
            raise WebhookRefused(_("the %(header)s signature does not match") % {"header": "X-Hub-Signature-256"})
    elif host == "gitee":
        # Gitee sends either the password itself or a signature of "timestamp\nsecret".
        token, timestamp = headers.get("X-Gitee-Token", ""), headers.get("X-Gitee-Timestamp", "")
        signed = base64.b64encode(hmac.new(secret.encode(), f"{timestamp}\n{secret}".encode(),
                                           hashlib.sha256).digest()).decode()
        if not (hmac.compare_digest(token, secret) or (timestamp and hmac.compare_digest(token, signed))):
            raise WebhookRefused(_("the %(header)s signature does not match") % {"header": "X-Gitee-Token"})
    else:  # GitLink speaks Gitea's dialect: a hex HMAC-SHA256 of the body
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, headers.get("X-Gitea-Signature", "")):
            raise WebhookRefused(_("the %(header)s signature does not match") % {"header": "X-Gitea-Signature"})


def _pull_request_event(host, headers, payload):
    """(PR page URL, author login) for an opened/updated PR, or None for any other event."""
    pr = payload.get("pull_request") or {}
    action = payload.get("action", "")
    if host == "github":
        wanted = headers.get("X-GitHub-Event") == "pull_request" and action in {"opened", "synchronize", "reopened"}
    elif host == "gitee":
        wanted = action in {"open", "update", "reopen"} and bool(pr)
    else:
        wanted = action in {"opened", "synchronized", "reopened"} and bool(pr)
    if not wanted:
        return None
    return pr.get("html_url", ""), (pr.get("user") or {}).get("login", "")


def handle_webhook(host, headers, body):
    """Verify a host's webhook and queue the PR's intake on the site queue (git fetches can take
    longer than hosts wait for an answer). Returns (queued, a message for the host's delivery log)."""
    if host not in settings.PR_HOSTS:
        raise WebhookRefused(_("unknown host %(host)s") % {"host": host})
    verify_webhook(host, headers, body)
    try:
        payload = json.loads(body)
    except ValueError:
        raise PullRequestError(_("the webhook body is not JSON"))
    event = _pull_request_event(host, headers, payload)
    if event is None:
        return False, _("ignored: not a pull request being opened or updated")
    url, login = event
    parse_pr_url(url)  # an unknown host or a malformed URL is refused now, not in the worker
    # Several: accounts that gave one handle before the profile refused another's; whose PR it is is unknown.
    owners = list(Contestant.objects.filter(**{HANDLE_FIELDS[host] + "__iexact": login})[:2]) if login else []
    if len(owners) > 1:
        return False, (_("ignored: several contestants have the %(host)s handle '%(login)s'; an organizer has to "
                         "leave it to its owner") % {"host": host, "login": login})
    if not owners:
        return False, _("ignored: no contestant has the %(host)s handle '%(login)s'") % {"host": host, "login": login}
    contestant = owners[0]
    queueing.enqueue_site_job(JOB_FUNCTION, kwargs={"contestant_id": contestant.pk, "pr_url": url},
                              description=f"pull request {url}")
    return True, _("queued: %(url)s for %(contestant)s") % {"url": url, "contestant": contestant.display_name}


JOB_FUNCTION = "submissions.jobs.submit_pull_request"
