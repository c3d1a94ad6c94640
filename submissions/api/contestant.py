"""The contestant side of the HTTP API: issues, submissions and pull requests, with a personal token."""
from typing import Annotated, List, Literal, Optional

from django.http import HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import File, Form, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from submissions import freeze_reads, run_limits, selectors
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import (LIMIT, OFFSET, Documents, JsonObjectIn, NonBlankText, Text, column_length,
                                    refuse_null_body)
from submissions.bundles import BundleError, bundle_from_uploads
from submissions.models import (ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Framework, Issue, Run,
                                RunStage, RunStatus, Season, Submission, SubmissionMode, Verdict)
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


RunStatusName = Literal[tuple(RunStatus.values)]
RunStageName = Optional[Literal[tuple(RunStage.values)]]
VerdictName = Literal[("", *Verdict.values)]
STAGE = Field(None, description="What a running run is doing, as its agent last reported it (null: not running, "
                                "or no report yet)")
CURRENT = Field(True, description="Whether this run's verdict is the one the submission shows on its GPU type "
                                  "(rejudges add runs; the older ones stay as history)")
PROVISIONAL = Field(False, description="A figure one untrusted host vouches for alone, awaiting a second judging on "
                                       "another host (or one that disagreed): it ranks nowhere; only the owner and "
                                       "organizers get its figure and result")
HIDDEN_UNTIL_THAW = Field(False, description="The run finished after its season's scoreboard froze: to anyone but "
                                            "the submission's owner and organizers its result is hidden until the "
                                            "thaw (verdict empty; figures, flags and result null or empty)")


class RunOut(Schema):
    id: int
    gpu_type: str
    status: RunStatusName = Field(description="waiting (over your cap of queued runs, kept by the site), queued "
                                              "(in its GPU type's queue), running, done")
    stage: RunStageName = STAGE
    queue_position: Optional[int] = Field(None, description="A queued run: its 1-based place among its GPU type's "
                                                            "jobs (null otherwise, or when the queue cannot be read)")
    runs_ahead: Optional[int] = Field(None, description="A waiting run: how many of your runs on its GPU type go "
                                                        "first (null otherwise)")
    elapsed_s: Optional[int] = Field(None, description="Whole seconds waited so far (waiting, queued) or judged "
                                                       "so far (running, since its agent started it, of at most "
                                                       "time_limit_s); null once done")
    time_limit_s: int = Field(description="The longest a judging may take from its agent's start "
                                          "(RUN_DEADLINE_SECONDS): a run still unfinished then is taken back and "
                                          "judged again")
    verdict: VerdictName = Field(description="Empty until the run is done")
    attempts: int
    speedup: Optional[float]
    reference_median_ms: Optional[float]
    candidate_median_ms: Optional[float]
    flags: list
    created_at: str
    finished_at: Optional[str]
    result: Optional[dict]
    current: bool = CURRENT
    provisional: bool = PROVISIONAL
    hidden_until_thaw: bool = HIDDEN_UNTIL_THAW
    cancelled_by_organizers: Optional[str] = Field(None, description="A run the organizers cancelled: their "
                                                                     "reason (empty when they gave none); null "
                                                                     "otherwise")

    @staticmethod
    def from_run(run, *, show_provisional=True, current=True, now=None, hidden=False):
        """`hidden`: a freeze hides its result from the reader (freeze_reads)."""
        provisional = timing_flags.is_provisional(run) and not hidden
        withheld = hidden or (provisional and not show_provisional)
        progress = selectors.run_progress(run, now or timezone.now())
        return RunOut(
            id=run.pk, gpu_type=run.gpu_type.slug, status=run.status, stage=progress["stage"] or None,
            queue_position=progress["queue_position"], runs_ahead=progress["runs_ahead"],
            elapsed_s=progress["elapsed_s"], time_limit_s=run_limits.limits()["judging_s"],
            verdict="" if hidden else run.verdict, attempts=run.attempts,
            speedup=None if withheld else run.speedup,
            reference_median_ms=None if hidden else run.reference_median_ms,
            candidate_median_ms=None if withheld else run.candidate_median_ms, flags=[] if hidden else run.flags,
            created_at=run.created_at.isoformat(), finished_at=run.finished_at.isoformat() if run.finished_at else None,
            result=None if withheld else run.result, current=current, provisional=provisional,
            hidden_until_thaw=hidden,
            cancelled_by_organizers=None if hidden else cancelling.organizer_reason(run),
        )


class LimitsOut(Schema):
    """The time limits its runs are judged under."""
    compile_s: int = Field(description="Each judged process's build: past it, compile_error")
    run_s: int = Field(description="Each judged process's run, after its build: past it, timeout")
    judging_s: int = Field(description="A whole judging, from its agent's start (each run's time_limit_s)")


class JudgingHardwareOut(Schema):
    """One GPU type of the season: whether it judges this bundle (why not, when not), and how many
    workers could take its runs now (0: the run waits until an agent for it connects)."""
    gpu_type: str
    name: str
    judged: bool
    why_not: str
    workers_online: int


SubmissionStateName = Literal[tuple(selectors.SubmissionState.values)]
STATE = Field(description="judging; then, until an organizer reviews it, passed_awaiting_review (every current run "
                          "passed) or awaiting_review; then the review's decision, accepted or rejected; cancelled: "
                          "every run was cancelled, nothing judged and nothing to review. A test or "
                          "benchmark submission is never reviewed: judging, then passed or failed")
RANKED = Field(description="Per GPU type slug, the figure that ranks: {speedup, run, runs_counted}")
SubmissionModeName = Literal[tuple(SubmissionMode.values)]
MODE = Field(description="ranked (judged, reviewed and ranked); test (correctness trials only: no timing, never "
                         "ranked or reviewed); benchmark (judged and timed in full, never ranked, reviewed or "
                         "public); profile (correctness trials, then a report of each kernel of both models under "
                         "the GPU's profiler: GET /api/v1/runs/{id}/profile; never ranked, reviewed or public). Test, "
                         "benchmark and profile submissions are yours and the organizers' alone")


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
    limits: LimitsOut
    ranked: dict = RANKED
    state: SubmissionStateName = STATE
    mode: SubmissionModeName = MODE
    url: str

    @staticmethod
    def from_submission(request, submission):
        runs = list(submission.runs.all())
        current = {run.pk for run in selectors.latest_runs(submission)}
        show_provisional = selectors.can_see_provisional(request.auth.user, submission)
        # in a season frozen for the reader: what the public sees (freeze_reads), the state it makes
        since = freeze_reads.Viewer(request.auth.user).submission_held_since(submission)
        hidden = freeze_reads.as_shown(runs, since)
        shown = [run for run in runs if run.pk not in hidden]
        state = (selectors.submission_state(submission) if since is None else selectors.submission_state(
            submission, runs=shown, reviews=freeze_reads.reviews_shown(submission.reviews.all(), since)))
        now = timezone.now()
        hardware = selectors.submission_hardware(submission)
        return SubmissionOut(
            needs_cuda=hardware["cuda_markers"],
            hardware=[JudgingHardwareOut(gpu_type=row["gpu_type"].slug, name=row["gpu_type"].name, judged=row["judged"],
                                  why_not=row["why_not"], workers_online=row["online"]) for row in hardware["rows"]],
            id=submission.pk, issue=submission.issue.code, season=submission.issue.season.code,
            contestant=submission.contestant.display_name, source=submission.source,
            bundle_sha256=submission.bundle_sha256, created_at=submission.created_at.isoformat(),
            files=[f.path for f in submission.files.all()],
            runs=[RunOut.from_run(r, show_provisional=show_provisional, current=r.pk in current, now=now,
                                  hidden=r.pk in hidden)
                  for r in runs], ranked=ranked_runs.summary(shown), limits=LimitsOut(**run_limits.limits()),
            state=state.value, mode=submission.mode,
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
