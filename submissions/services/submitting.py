"""Creating issues and submissions."""
import hashlib

from django.db import IntegrityError, transaction
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from submissions import hidden_characters
from submissions.bundles import Bundle
from submissions.models import (ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Contestant, Framework, Issue,
                                RunStatus, Submission, SubmissionFile, SubmissionSource, new_issue_code)
from submissions.rules import ranked_runs
from submissions.services import abuse, accounts, hardware, judging, standings


class SubmissionRefused(ValueError):
    """The submission cannot be accepted (closed season, someone else's issue, ...)."""


class TooManyRequests(SubmissionRefused):
    """A rate limit: the message says when to try again, `retry_after_s` in how many seconds (HTTP 429)."""

    def __init__(self, message, retry_after_s=None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AlreadySubmitted(SubmissionRefused):
    """The contestant submitted exactly this bundle to the issue before (HTTP 409); `earlier` is that submission."""

    def __init__(self, message, earlier):
        super().__init__(message)
        self.earlier = earlier


def earlier_identical(contestant, issue, bundle_sha256):
    """The contestant's earlier submission of exactly this bundle (every file, byte for byte) to the issue that
    was judged or is being judged, or None. Judging the same code again only draws another sample of its
    timing noise, and keeping the luckiest would rank luck (ranked_runs). One the platform never judged (every
    run an internal error or cancelled) does not count: nothing the contestant sent is lost."""
    earlier = (Submission.objects.filter(contestant=contestant, issue=issue, bundle_sha256=bundle_sha256)
               .prefetch_related("runs").order_by("created_at"))
    return next((s for s in earlier if any(r.status != RunStatus.DONE or r.verdict not in ranked_runs.NOT_A_JUDGEMENT
                                           for r in s.runs.all())), None)


def _already_submitted(earlier):
    when = timezone.localtime(earlier.created_at)
    return AlreadySubmitted(
        _("you submitted exactly this bundle to issue %(issue)s before, as submission #%(id)s (%(when)s): the same "
          "code is judged once, and its ranked figure is the median of its runs. Change the code to submit again.")
        % {"issue": earlier.issue.code, "id": earlier.pk,
           "when": f"{formats.date_format(when, 'DATETIME_FORMAT')} {when.tzname()}"},
        earlier)


def issue_title_refusal(title):
    """Why an issue's title is refused for a hidden character (hidden_characters.py), or ""."""
    return hidden_characters.refusal(title, _("an issue's title"))


def issue_operator_refusal(operator):
    return hidden_characters.refusal(operator, _("an issue's operator"))


def note_refusal(note):
    """Why a submission's note is refused for its length, or ""."""
    if len(note) > SUBMISSION_NOTE_MAX_CHARS:
        return (_("a submission's note has at most %(count)s characters; this one has %(length)s")
                % {"count": SUBMISSION_NOTE_MAX_CHARS, "length": len(note)})
    return ""


def open_issue(season, author, *, title, operator="", framework="pytorch", level=None, description=""):
    if not season.is_open:
        raise SubmissionRefused(_("season %(season)s is closed") % {"season": season.code})
    if not title.strip():
        raise SubmissionRefused(_("an issue needs a title"))
    hidden = issue_title_refusal(title) or issue_operator_refusal(operator)
    if hidden:
        raise SubmissionRefused(hidden)
    if framework not in Framework.values:
        raise SubmissionRefused(_("unknown framework '%(framework)s'; one of %(known)s")
                                % {"framework": framework, "known": ", ".join(Framework.values)})
    if len(description) > ISSUE_DESCRIPTION_MAX_CHARS:
        raise SubmissionRefused(_("an issue's description has at most %(count)s characters; this one has %(length)s")
                                % {"count": ISSUE_DESCRIPTION_MAX_CHARS, "length": len(description)})
    if level is not None and level not in (1, 2, 3, 4):
        raise SubmissionRefused(_("the claimed level must be 1, 2, 3 or 4, not %(level)s") % {"level": level})
    with transaction.atomic():
        # Serialize one contestant's concurrent requests so the rate limit counts them all.
        Contestant.objects.select_for_update().filter(pk=author.pk).first()
        try:
            abuse.check_issue_rate_limit(author)
        except abuse.RateLimited as exc:
            raise TooManyRequests(str(exc), exc.retry_after_s)
        for _attempt in range(10):
            try:
                with transaction.atomic():
                    return Issue.objects.create(
                        season=season, code=new_issue_code(), title=title.strip(), operator=operator,
                        framework=framework, level=level, description=description, author=author,
                    )
            except IntegrityError:
                continue  # a code collision: draw another
    raise RuntimeError("could not draw a free issue code")


@transaction.atomic
def create_submission(contestant, issue, bundle: Bundle, *, source=SubmissionSource.UPLOAD, pr_url="", pr_commit="", note=""):
    """Store the bundle, fingerprint and flag it, fan out one run per GPU type that can judge it
    (services/hardware.py), enqueue them after commit."""
    too_long = note_refusal(note)
    if too_long:
        raise SubmissionRefused(too_long)
    if issue.author_id != contestant.pk:
        raise SubmissionRefused(_("issue %(issue)s belongs to another contestant; open your own issue") % {"issue": issue.code})
    if not issue.season.is_open:
        raise SubmissionRefused(_("season %(season)s is closed") % {"season": issue.season.code})
    if not accounts.has_current_agreement(contestant):
        raise SubmissionRefused(accounts.agreement_missing_message())
    try:  # which GPU types judge it, before anything is stored
        plan = hardware.check_judgeable(issue.season, bundle.files)
    except hardware.NoHardwareForBundle as exc:
        raise SubmissionRefused(str(exc))
    # Serialize one contestant's concurrent submissions so the rate limit counts them all (and a double click
    # finds its twin).
    Contestant.objects.select_for_update().filter(pk=contestant.pk).first()
    earlier = earlier_identical(contestant, issue, bundle.sha256)
    if earlier is not None:
        raise _already_submitted(earlier)
    try:
        abuse.check_rate_limit(contestant, issue.season)
    except abuse.RateLimited as exc:
        raise TooManyRequests(str(exc), exc.retry_after_s)
    submission = Submission.objects.create(
        issue=issue, contestant=contestant, source=source, pr_url=pr_url, pr_commit=pr_commit,
        bundle_sha256=bundle.sha256, note=note,
    )
    SubmissionFile.objects.bulk_create(
        SubmissionFile(
            submission=submission, path=path, content=text, size=len(text.encode()),
            sha256=hashlib.sha256(text.encode()).hexdigest(),
        )
        for path, text in bundle.files.items()
    )
    abuse.fingerprint_submission(submission, bundle.files)
    abuse.check_on_submit(submission)
    judging.create_runs(submission, gpu_types=plan.judged)
    standings.refresh_for(issue.season, contestant, actor=contestant.user)
    return submission
