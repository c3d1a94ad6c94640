"""Creating issues and submissions."""
import hashlib

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from submissions import hidden_characters, kernel_identity, season_access_reads
from submissions.bundles import Bundle
from submissions.models import (ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Contestant, Framework, Issue,
                                RunStatus, Submission, SubmissionFile, SubmissionMode, SubmissionSource, new_issue_code)
from submissions.rules import ranked_runs
from submissions.services import abuse, accounts, hardware, judging, standings


class SubmissionRefused(ValueError):
    """The submission cannot be accepted (closed season, someone else's issue, ...)."""


class AccessRefused(SubmissionRefused):
    """A ban from the season, or an invite-only season that has not admitted the contestant (HTTP 403);
    the message says how to get in (season_access_reads.refusal)."""


def check_access(season, contestant):
    refused = season_access_reads.refusal(season, contestant)
    if refused:
        raise AccessRefused(refused)


class TooManyRequests(SubmissionRefused):
    """A rate limit: the message says when to try again, `retry_after_s` in how many seconds (HTTP 429)."""

    def __init__(self, message, retry_after_s=None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AlreadySubmitted(SubmissionRefused):
    """The contestant submitted this kernel before (HTTP 409); `earlier` is that submission."""

    def __init__(self, message, earlier):
        super().__init__(message)
        self.earlier = earlier


def earlier_identical(contestant, season, digest):
    """The contestant's earlier submission of the same kernel (kernel_identity: the same code for the same
    operator, whatever the readme, the self-test or the whitespace) in the season, to any of their issues,
    that was judged or is being judged, or None. Judging the same code again only draws another sample of
    its timing noise, and keeping the luckiest would rank luck (ranked_runs); the same kernel accepted
    under two issues would count twice. One the platform never judged (every run an internal error or
    cancelled) does not count: nothing the contestant sent is lost. Only ranked submissions hold a kernel's
    figure: a test or benchmark run of the same kernel never stands in the way."""
    earlier = (Submission.objects.filter(contestant=contestant, issue__season=season, kernel_digest=digest,
                                         mode=SubmissionMode.RANKED)
               .select_related("issue").prefetch_related("runs").order_by("created_at"))
    return next((s for s in earlier if any(r.status != RunStatus.DONE or r.verdict not in ranked_runs.NOT_A_JUDGEMENT
                                           for r in s.runs.all())), None)


def _already_submitted(earlier, issue):
    when = timezone.localtime(earlier.created_at)
    values = {"issue": earlier.issue.code, "id": earlier.pk,
              "when": f"{formats.date_format(when, 'DATETIME_FORMAT')} {when.tzname()}"}
    if earlier.issue_id == issue.pk:
        message = _("you submitted this kernel to issue %(issue)s before, as submission #%(id)s (%(when)s): the same "
                    "code is judged once, and its ranked figure is the median of its runs (a changed readme, "
                    "self-test or whitespace is the same code). Change the code to submit again.") % values
    else:
        message = _("you submitted this kernel for the same operator to issue %(issue)s, as submission #%(id)s "
                    "(%(when)s): one kernel has one ranked figure, the median of that submission's runs. Change "
                    "the code to submit it here.") % values
    return AlreadySubmitted(message, earlier)


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
    check_access(season, author)
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


def may_submit_to(issue, contestant) -> bool:
    """An issue is its author's to submit to, unless the organizers fixed its reference: then it is a
    published problem, every admitted contestant's (check_access decides who is admitted)."""
    return contestant is not None and (issue.author_id == contestant.pk or bool(issue.fixed_reference))


def issues_open_to(contestant):
    """The issues of open seasons `contestant` may submit to: their own and the published problems."""
    return (Issue.objects.filter(Q(author=contestant) | ~Q(fixed_reference=""), season__is_open=True)
            .select_related("season"))


@transaction.atomic
def create_submission(contestant, issue, bundle: Bundle, *, source=SubmissionSource.UPLOAD, pr_url="", pr_commit="", note="",
                      mode=SubmissionMode.RANKED, gpu_types=None, profile_of=None):
    """Store the bundle, fingerprint and flag it, fan out one run per GPU type that can judge it
    (services/hardware.py), enqueue them after commit. `mode`: ranked (the default), test (correctness
    only), benchmark (judged fully, never ranked) or profile (correctness, then a profile report); each
    has its own rate limit, and only a ranked one is held to the one-kernel rule. `gpu_types`: only these
    of the plan's (a profile of one run: its type); `profile_of`: the run a profile was asked for."""
    too_long = note_refusal(note)
    if too_long:
        raise SubmissionRefused(too_long)
    if mode not in SubmissionMode.values:
        raise SubmissionRefused(_("unknown mode '%(mode)s'; one of %(known)s")
                                % {"mode": mode, "known": ", ".join(SubmissionMode.values)})
    if not may_submit_to(issue, contestant):
        raise SubmissionRefused(_("issue %(issue)s belongs to another contestant; open your own issue") % {"issue": issue.code})
    if not issue.season.is_open:
        raise SubmissionRefused(_("season %(season)s is closed") % {"season": issue.season.code})
    check_access(issue.season, contestant)
    if not accounts.has_current_agreement(contestant):
        raise SubmissionRefused(accounts.agreement_missing_message())
    try:  # which GPU types judge it, before anything is stored
        plan = hardware.check_judgeable(issue.season, bundle.files)
    except hardware.NoHardwareForBundle as exc:
        raise SubmissionRefused(str(exc))
    judged = plan.judged if gpu_types is None else [t for t in plan.judged if t in gpu_types]
    if not judged:
        raise SubmissionRefused(_("none of the GPU types asked for (%(asked)s) judges this bundle in season %(season)s")
                                % {"asked": ", ".join(t.slug for t in gpu_types), "season": issue.season.code})
    # Serialize one contestant's concurrent submissions so the rate limit counts them all (and a double click
    # finds its twin).
    Contestant.objects.select_for_update().filter(pk=contestant.pk).first()
    digest = kernel_identity.kernel_digest(bundle.files)
    earlier = earlier_identical(contestant, issue.season, digest) if mode == SubmissionMode.RANKED else None
    if earlier is not None:
        raise _already_submitted(earlier, issue)
    try:
        abuse.check_rate_limit(contestant, issue.season, mode=mode)
    except abuse.RateLimited as exc:
        raise TooManyRequests(str(exc), exc.retry_after_s)
    submission = Submission.objects.create(
        issue=issue, contestant=contestant, source=source, pr_url=pr_url, pr_commit=pr_commit,
        bundle_sha256=bundle.sha256, kernel_digest=digest, note=note, mode=mode, profile_of=profile_of,
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
    judging.create_runs(submission, gpu_types=judged)
    standings.refresh_for(issue.season, contestant, actor=contestant.user)
    return submission
