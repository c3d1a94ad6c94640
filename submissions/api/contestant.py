"""The contestant side of the HTTP API: issues, submissions and pull requests, with a personal token."""
from typing import Annotated, List, Literal, Optional

from django.http import HttpResponse
from django.utils.translation import gettext as _
from ninja import File, Form, Router, Schema, Status
from ninja.files import UploadedFile
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from submissions import selectors
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import Documents, JsonObjectIn, NonBlankText, Text, column_length
from submissions.bundles import BundleError, bundle_from_uploads
from submissions.models import ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Framework, Issue, Season, Submission
from submissions.pull_requests import PullRequestError, pull_request_url_pattern
from submissions.rules import ranked_runs, timing_flags
from submissions.services import pr_intake, submitting


contestant_router = Router(tags=["contestant"], auth=ContestantTokenAuth())


def _note_within_limit(note):
    too_long = submitting.note_refusal(note)
    if too_long:  # the service's message, which says how long the note is
        raise PydanticCustomError("note_too_long", too_long)
    return note


Note = Annotated[Text, AfterValidator(_note_within_limit), Documents(maxLength=SUBMISSION_NOTE_MAX_CHARS)]


class RunOut(Schema):
    id: int
    gpu_type: str
    status: str
    verdict: str
    attempts: int
    speedup: Optional[float]
    reference_median_ms: Optional[float]
    candidate_median_ms: Optional[float]
    flags: list
    created_at: str
    finished_at: Optional[str]
    result: Optional[dict]
    # a figure one untrusted host vouches for alone, awaiting a second judging on another host (or one
    # that disagreed): it ranks nowhere; only the owner and organizers get its figure and result
    provisional: bool = False

    @staticmethod
    def from_run(run, *, show_provisional=True):
        provisional = timing_flags.is_provisional(run)
        withheld = provisional and not show_provisional
        return RunOut(
            id=run.pk, gpu_type=run.gpu_type.slug, status=run.status, verdict=run.verdict, attempts=run.attempts,
            speedup=None if withheld else run.speedup, reference_median_ms=run.reference_median_ms,
            candidate_median_ms=None if withheld else run.candidate_median_ms, flags=run.flags,
            created_at=run.created_at.isoformat(), finished_at=run.finished_at.isoformat() if run.finished_at else None,
            result=None if withheld else run.result, provisional=provisional,
        )


class JudgingHardwareOut(Schema):
    """One GPU type of the season: whether it judges this bundle (why not, when not), and how many
    workers could take its runs now (0: the run waits until an agent for it connects)."""
    gpu_type: str
    name: str
    judged: bool
    why_not: str
    workers_online: int


class SubmissionOut(Schema):
    id: int
    issue: str
    season: str
    contestant: str
    source: str
    bundle_sha256: str
    created_at: str
    files: List[str]
    needs_cuda: List[str]
    hardware: List[JudgingHardwareOut]
    runs: List[RunOut]
    # per GPU type slug, the figure that ranks (ranked_runs): {"speedup", "run", "runs_counted"}
    ranked: dict
    state: Literal[tuple(selectors.SubmissionState.values)] = Field(
        description="judging; then, until an organizer reviews it, passed_awaiting_review (every latest run "
                    "passed) or awaiting_review; then the review's decision, accepted or rejected")
    url: str

    @staticmethod
    def from_submission(request, submission):
        runs = list(submission.runs.all())
        hardware = selectors.submission_hardware(submission)
        return SubmissionOut(
            needs_cuda=hardware["cuda_markers"],
            hardware=[JudgingHardwareOut(gpu_type=row["gpu_type"].slug, name=row["gpu_type"].name, judged=row["judged"],
                                  why_not=row["why_not"], workers_online=row["online"]) for row in hardware["rows"]],
            id=submission.pk, issue=submission.issue.code, season=submission.issue.season.code,
            contestant=submission.contestant.display_name, source=submission.source,
            bundle_sha256=submission.bundle_sha256, created_at=submission.created_at.isoformat(),
            files=[f.path for f in submission.files.all()],
            runs=[RunOut.from_run(r, show_provisional=selectors.can_see_provisional(request.auth.user, submission))
                  for r in runs], ranked=ranked_runs.summary(runs),
            state=selectors.submission_state(submission).value,
            url=request.build_absolute_uri(f"/submissions/{submission.pk}/"),
        )


class IssueIn(JsonObjectIn):
    season: Text
    title: NonBlankText = Field(max_length=column_length(Issue, "title"))
    operator: Text = Field("", max_length=column_length(Issue, "operator"))
    framework: Literal[tuple(Framework.values)] = Framework.PYTORCH.value
    level: Optional[Literal[1, 2, 3, 4]] = Field(None, description="The level claimed (seed 000's rubric)")
    description: Text = Field("", max_length=ISSUE_DESCRIPTION_MAX_CHARS)


class IssueOut(Schema):
    code: str
    season: str
    title: str
    operator: str
    framework: str
    level: Optional[int]


def _issue_out(issue):
    return IssueOut(code=issue.code, season=issue.season.code, title=issue.title, operator=issue.operator,
                    framework=issue.framework, level=issue.level)


def _too_many(response, exc):
    """429 with Retry-After: a client that honours it waits exactly as long as the message says."""
    if exc.retry_after_s:
        response["Retry-After"] = str(exc.retry_after_s)
    return Status(429, {"detail": str(exc)})


@contestant_router.post("/issues", response=answers({201: IssueOut}, 401, 404, 422, 429), url_name="issue_create")
def create_issue(request, payload: IssueIn, response: HttpResponse):
    """Open an issue. At most ISSUES_PER_HOUR / ISSUES_PER_DAY per contestant: beyond, 429 with Retry-After."""
    season = Season.objects.filter(code=payload.season).first()
    if season is None:
        return Status(404, {"detail": _("season %(season)s does not exist") % {"season": payload.season}})
    try:
        issue = submitting.open_issue(season, request.auth, title=payload.title, operator=payload.operator,
                                      framework=payload.framework, level=payload.level,
                                      description=payload.description)
    except submitting.TooManyRequests as exc:
        return _too_many(response, exc)
    except submitting.SubmissionRefused as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, _issue_out(issue))


@contestant_router.post("/submissions", response=answers({201: SubmissionOut}, 401, 404, 409, 413, 422, 429),
                        url_name="submission_create")
def create_submission(request, response: HttpResponse, issue: Text = Form(...),
                      note: Note = Form(""),
                      files: List[UploadedFile] = File(None)):
    """Submit a bundle for one of your issues: several `files`, or one zip in `files`. Beyond the
    season's submissions per hour or day: 429 with Retry-After. Exactly the bundle you submitted to the
    issue before: 409, naming that submission."""
    issue_row = Issue.objects.select_related("season").filter(code=issue.strip().upper()).first()
    if issue_row is None:
        return Status(404, {"detail": _("issue %(issue)s does not exist") % {"issue": issue}})
    try:
        bundle = bundle_from_uploads(files or [])
        submission = submitting.create_submission(request.auth, issue_row, bundle, source="api", note=note)
    except BundleError as exc:
        return Status(400, {"detail": _("bundle refused: %(errors)s") % {"errors": "; ".join(exc.errors)}})
    except submitting.TooManyRequests as exc:
        return _too_many(response, exc)
    except submitting.AlreadySubmitted as exc:
        return Status(409, {"detail": str(exc)})
    except submitting.SubmissionRefused as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, SubmissionOut.from_submission(request, selectors.submission_with_runs(submission.pk)))


@contestant_router.get("/submissions/{submission_id}", response=answers({200: SubmissionOut}, 401, 404, 422),
                       url_name="submission_detail")
def read_submission(request, submission_id: int):
    submission = selectors.submission_with_runs(submission_id)
    if submission is None or not selectors.can_see_code(request.auth.user, submission):
        return Status(404, {"detail": _("submission %(id)s does not exist or is not yours") % {"id": submission_id}})
    return SubmissionOut.from_submission(request, submission)


class PullRequestIn(JsonObjectIn):
    # The pattern documents the hosts the site knows (PR_HOSTS); parse_pr_url says what is wrong with another.
    pr_url: Text = Field(max_length=column_length(Submission, "pr_url"),
                         json_schema_extra={"pattern": pull_request_url_pattern()},
                         examples=["https://gitee.com/OWNER/REPO/pulls/1"])
    issue: Optional[Text] = None


@contestant_router.post("/pull-requests", response=answers({201: List[SubmissionOut]}, 401, 404, 422),
                        url_name="submission_from_pull_request")
def create_submissions_from_pull_request(request, payload: PullRequestIn):
    """Fetch a pull request's head with git and submit the folder `S<season>/<issue code>/` of each of
    your issues it holds (or of `issue` alone). A commit already submitted, or folders whose files are exactly
    those of your earlier submission to their issue, yield an empty list."""
    issue_row = None
    if payload.issue:
        issue_row = Issue.objects.select_related("season").filter(code=payload.issue.strip().upper()).first()
        if issue_row is None or issue_row.author_id != request.auth.pk:
            return Status(404, {"detail": _("issue %(issue)s does not exist or is not yours") % {"issue": payload.issue}})
    try:
        created = pr_intake.submit_pull_request(request.auth, payload.pr_url, issue=issue_row)
    except (PullRequestError, submitting.SubmissionRefused) as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, [SubmissionOut.from_submission(request, selectors.submission_with_runs(s.pk)) for s in created])
