"""The contestant side of the HTTP API: issues, submissions and pull requests, with a personal token."""
from typing import Annotated, List, Literal, Optional

from django.http import HttpResponse
from django.utils.translation import gettext as _
from ninja import File, Form, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from submissions import selectors
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import (LIMIT, OFFSET, Documents, JsonObjectIn, NonBlankText, Text, column_length,
                                    refuse_null_body)
from submissions.api.submission_answers import (MODE, PROVISIONAL, RANKED, STAGE, STATE, RunOut, RunStageName,
                                                RunStatusName, SubmissionModeName, SubmissionOut,
                                                SubmissionStateName, VerdictName)
from submissions.bundles import BundleError, bundle_from_uploads
from submissions.models import (ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Framework, Issue, Run,
                                Season, Submission, SubmissionMode)
from submissions.pull_requests import PullRequestError, pull_request_url_pattern
from submissions.rules import ranked_runs, timing_flags
from submissions.services import cancelling, pr_intake, submitting


contestant_router = Router(tags=["contestant"], auth=ContestantTokenAuth())


def _note_within_limit(note):
    too_long = submitting.note_refusal(note)
    if too_long:  # the service's message, which says how long the note is
        raise PydanticCustomError("note_too_long", too_long)
    return note


Note = Annotated[Text, AfterValidator(_note_within_limit), Documents(maxLength=SUBMISSION_NOTE_MAX_CHARS)]


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


@contestant_router.post("/issues", response=answers({201: IssueOut}, 401, 403, 404, 422, 429), url_name="issue_create")
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
    except submitting.AccessRefused as exc:  # banned, or not admitted to an invite-only season
        return Status(403, {"detail": str(exc)})
    except submitting.SubmissionRefused as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, _issue_out(issue))


@contestant_router.post("/submissions", response=answers({201: SubmissionOut}, 401, 403, 404, 409, 413, 422, 429),
                        url_name="submission_create")
def create_submission(request, response: HttpResponse, issue: Text = Form(...),
                      note: Note = Form(""),
                      mode: SubmissionModeName = Form(SubmissionMode.RANKED.value, description=MODE.description),
                      files: List[UploadedFile] = File(None)):
    """Submit a bundle for one of your issues, or for a published problem (an issue whose reference the
    organizers fixed: send cudacode.py and your files; a torchcode.py must be a copy of the issue's or is
    refused): several `files`, or one zip in `files`. Beyond the
    season's submissions per hour or day (each mode counted on its own): 429 with Retry-After. `mode`: ranked
    (the default), test, benchmark or profile (on every GPU type that judges it; POST /runs/{id}/profile profiles
    one passed run on its own type). A ranked submission of a kernel you submitted ranked before: 409,
    naming that submission (test, benchmark and profile submissions are never refused for it). Banned from the season, or not admitted to an invite-only
    one: 403, saying how to get in."""
    issue_row = Issue.objects.select_related("season").filter(code=issue.strip().upper()).first()
    if issue_row is None:
        return Status(404, {"detail": _("issue %(issue)s does not exist") % {"issue": issue}})
    try:
        bundle = bundle_from_uploads(files or [], issue_row.fixed_reference, issue_row.code)
        submission = submitting.create_submission(request.auth, issue_row, bundle, source="api", note=note, mode=mode)
    except BundleError as exc:
        return Status(400, {"detail": _("bundle refused: %(errors)s") % {"errors": "; ".join(exc.errors)}})
    except submitting.TooManyRequests as exc:
        return _too_many(response, exc)
    except submitting.AlreadySubmitted as exc:
        return Status(409, {"detail": str(exc)})
    except submitting.AccessRefused as exc:
        return Status(403, {"detail": str(exc)})
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


class CancelIn(JsonObjectIn):
    reason: Text = Field("", max_length=cancelling.OWN_REASON_MAX_CHARS,
                         description="Why, if you like (kept in the audit trail)")


@contestant_router.post("/runs/{run_id}/cancel", response=answers({200: RunOut}, 401, 403, 404, 409, 422),
                        url_name="run_cancel")
def cancel_own_run(request, run_id: int, payload: Optional[CancelIn] = None):
    """Cancel a run of yours that no agent has started (queued or waiting): it ends as `cancelled` and
    frees your place in its queue (audited). No body, `{}`, or `{"reason": "..."}`. Another's run: 403; a
    run being judged or finished, or one the organizers queued (a rejudge, a second judging): 409."""
    refuse_null_body(request, payload)
    try:
        run = cancelling.cancel_own_run(run_id, request.auth.user, payload.reason if payload else "")
    except Run.DoesNotExist:
        return Status(404, {"detail": _("run %(id)s does not exist") % {"id": run_id}})
    except cancelling.NotYours as exc:
        return Status(403, {"detail": str(exc)})
    except cancelling.CancelRefused as exc:
        return Status(409, {"detail": str(exc)})
    return RunOut.from_run(run)


class RunSummaryOut(Schema):
    """A run as a list shows it: the current one of its GPU type."""
    id: int
    gpu_type: str
    status: RunStatusName
    stage: RunStageName = STAGE
    verdict: VerdictName
    speedup: Optional[float]
    flags: list
    provisional: bool = PROVISIONAL


class SubmissionSummaryOut(Schema):
    id: int
    issue: str
    issue_title: str
    season: str
    created_at: str
    note: str
    state: SubmissionStateName = STATE
    runs: List[RunSummaryOut] = Field(description="The current run of each GPU type, by GPU type")
    ranked: dict = RANKED
    mode: SubmissionModeName = MODE
    url: str

    @staticmethod
    def from_submission(request, submission):
        runs = list(submission.runs.all())
        return SubmissionSummaryOut(
            id=submission.pk, issue=submission.issue.code, issue_title=submission.issue.title,
            season=submission.issue.season.code, created_at=submission.created_at.isoformat(), note=submission.note,
            state=submission.state.value, ranked=ranked_runs.summary(runs), mode=submission.mode,
            runs=[RunSummaryOut(id=r.pk, gpu_type=r.gpu_type.slug, status=r.status,
                                stage=selectors.live_stage(r) or None,
                                verdict=r.verdict, speedup=r.speedup, flags=r.flags,
                                provisional=timing_flags.is_provisional(r))
                  for r in selectors.latest_runs(submission)],
            url=request.build_absolute_uri(f"/submissions/{submission.pk}/"),
        )


class SubmissionListOut(Schema):
    total: int = Field(description="How many there are in all (of the season asked for)")
    offset: int
    rows: List[SubmissionSummaryOut]


SEASON_FILTER = Query("", description="A season's code: only what belongs to it (left out: every season)")


def _season_or_404(code):
    season = Season.objects.filter(code=code).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    return season


@contestant_router.get("/submissions", response=answers({200: SubmissionListOut}, 401, 404, 422),
                       url_name="own_submissions")
def list_own_submissions(request, season: str = SEASON_FILTER, offset: int = OFFSET, limit: int = LIMIT):
    """Your submissions, newest first, each with the current run of each GPU type."""
    season_row = _season_or_404(season) if season else None
    rows = selectors.contestant_submissions(request.auth, request.auth.user, limit, offset=offset, season=season_row)
    return SubmissionListOut(total=selectors.contestant_submissions_query(request.auth, season_row).count(),
                             offset=offset, rows=[SubmissionSummaryOut.from_submission(request, s) for s in rows])


class OwnIssueOut(IssueOut):
    created_at: str
    submission_count: int
    season_open: bool = Field(description="Whether its season accepts submissions now")


class OwnIssueListOut(Schema):
    total: int = Field(description="How many there are in all (of the season asked for)")
    offset: int
    rows: List[OwnIssueOut]


@contestant_router.get("/issues", response=answers({200: OwnIssueListOut}, 401, 404, 422), url_name="own_issues")
def list_own_issues(request, season: str = SEASON_FILTER, offset: int = OFFSET, limit: int = LIMIT):
    """The issues you opened (the ones you may submit to), newest first."""
    issues = selectors.search_issues(season=_season_or_404(season) if season else None, author=request.auth)
    return OwnIssueListOut(total=issues.count(), offset=offset, rows=[
        OwnIssueOut(**_issue_out(issue).model_dump(), created_at=issue.created_at.isoformat(),
                    submission_count=issue.submission_count, season_open=issue.season.is_open)
        for issue in issues[offset:offset + limit]])


class ContestantSelfOut(Schema):
    id: int
    display_name: str
    affiliation: str
    organizer: bool = Field(description="Whether the token's account is an organizer's")


@contestant_router.get("/me", response=answers({200: ContestantSelfOut}, 401), url_name="token_owner")
def token_owner(request):
    """Whose the token is: a client checks a token with it."""
    contestant = request.auth
    return ContestantSelfOut(id=contestant.pk, display_name=contestant.display_name,
                             affiliation=contestant.affiliation, organizer=selectors.is_organizer(contestant.user))


class PullRequestIn(JsonObjectIn):
    # The pattern documents the hosts the site knows (PR_HOSTS); parse_pr_url says what is wrong with another.
    pr_url: Text = Field(max_length=column_length(Submission, "pr_url"),
                         json_schema_extra={"pattern": pull_request_url_pattern()},
                         examples=["https://gitee.com/OWNER/REPO/pulls/1"])
    issue: Optional[Text] = None


@contestant_router.post("/pull-requests", response=answers({201: List[SubmissionOut]}, 401, 403, 404, 422),
                        url_name="submission_from_pull_request")
def create_submissions_from_pull_request(request, payload: PullRequestIn):
    """Fetch a pull request's head with git and submit the folder `S<season>/<issue code>/` of each of
    your issues it holds (or of `issue` alone). A commit already submitted, or folders whose files are exactly
    those of your earlier submission to their issue, yield an empty list."""
    issue_row = None
    if payload.issue:
        issue_row = Issue.objects.select_related("season").filter(code=payload.issue.strip().upper()).first()
        if issue_row is None or not submitting.may_submit_to(issue_row, request.auth):
            return Status(404, {"detail": _("issue %(issue)s does not exist or is not yours") % {"issue": payload.issue}})
    try:
        created = pr_intake.submit_pull_request(request.auth, payload.pr_url, issue=issue_row)
    except submitting.AccessRefused as exc:
        return Status(403, {"detail": str(exc)})
    except (PullRequestError, submitting.SubmissionRefused) as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, [SubmissionOut.from_submission(request, selectors.submission_with_runs(s.pk)) for s in created])
