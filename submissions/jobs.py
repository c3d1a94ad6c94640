"""Jobs of the site's own RQ worker (`python manage.py rqworker site`)."""
from submissions.models import Contestant
from submissions.pull_requests import PullRequestError, parse_pr_url
from submissions.services import audit, pr_comments, pr_intake, submitting


def submit_pull_request(contestant_id, pr_url):
    """A webhook's PR intake. A refusal is kept in the audit trail and told on the PR itself."""
    contestant = Contestant.objects.get(pk=contestant_id)
    try:
        created = pr_intake.submit_pull_request(contestant, pr_url)
    except (PullRequestError, submitting.SubmissionRefused) as exc:
        audit.record("pr.refused", contestant, actor_label="pr-bot", reason=f"{pr_url}: {exc}")
        pr_comments.post_refusal(parse_pr_url(pr_url), str(exc), contestant)
        return {"error": str(exc)}
    return {"submissions": [s.pk for s in created]}


def post_pr_verdicts(submission_id, attempt=1):
    """The verdict table on a judged PR; a failure queues the next attempt (see pr_comments)."""
    return pr_comments.deliver_verdicts(submission_id, attempt)
