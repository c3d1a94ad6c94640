"""HTTP API of the contest domain: the agent side and the contestant side (mounted under /api/v1/)."""
import logging
from typing import List, Literal, Optional

from django.http import HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from ninja import File, Form, Header, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from pydantic import Field, model_validator

from submissions import ranked_runs, selectors
from submissions.api_auth import AgentAuth, ContestantTokenAuth
from submissions.api_fields import Text, column_length, replace_nul
from submissions.bundles import BundleError, bundle_from_uploads, bundle_to_zip
from submissions.models import (ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Framework, Issue, Run, RunStage,
                                Season, Submission)
from submissions.result_schema import RunResult
from submissions.pull_requests import PullRequestError, pull_request_url_pattern
from submissions.services import fleet, judging, pr_intake, recovery, submitting
from submissions.services.accounts import record_heartbeat

log = logging.getLogger(__name__)

agent_router = Router(tags=["agent"], auth=AgentAuth())
contestant_router = Router(tags=["contestant"], auth=ContestantTokenAuth())


class ErrorOut(Schema):
    detail: str


class ValidationErrorOut(ErrorOut):
    """422: `detail` names each field and its problem; `errors` has pydantic's list of them."""
    errors: List[dict]


class OkOut(Schema):
    ok: bool
    detail: str = ""


def answers(ok, *errors):
    """An operation's documented responses: `ok` ({status: schema}) and the error statuses it may give,
    each with a `detail`. 400 is on every one: the address had a NUL (leaderboard.middleware)."""
    documented = dict(ok)
    for status in sorted({400, *errors}):
        documented.setdefault(status, ValidationErrorOut if status == 422 else ErrorOut)
    return documented


# ---- agent side -------------------------------------------------------------------------


class AgentReport(Schema):
    """What an agent sends is machine output (GPU names, logs of judged code): a NUL in it is replaced,
    not refused, so a heartbeat or a verdict is never lost to it."""

    @model_validator(mode="wrap")  # "wrap": a "before" validator would see ninja's wrapper, not the dict
    @classmethod
    def _replace_nul(cls, data, handler):
        return handler(replace_nul(data))


class WorkerGpuIn(Schema):
    index: Optional[int] = None
    uuid: Optional[str] = None
    model: Optional[str] = None
    driver: Optional[str] = None
    memory_bytes: Optional[int] = None


class WorkerIn(Schema):
    """One `profiler_agent work` process: its name (unique per agent), GPU (null on CPU), harness
    version and the run it is judging."""
    name: str
    gpu: Optional[WorkerGpuIn] = None
    harness_version: Optional[str] = None
    current_run: Optional[int] = None


class JudgingIn(Schema):
    run_id: int
    attempt: int


class HeartbeatIn(AgentReport):
    name: Optional[str] = None
    queues: List[str] = []
    inventory: dict = {}
    versions: dict = {}
    worker: Optional[WorkerIn] = None
    # The attempts this worker is judging now ([] when idle); absent from agents too old to say.
    judging: Optional[List[JudgingIn]] = None
    # The attempts a killed worker of the same name was judging (sent once, by its restarted successor).
    abandoned: List[JudgingIn] = []


class HeartbeatOut(OkOut):
    accept_jobs: bool = True
    why: str = ""
    outdated: bool = False
    outdated_for: List[dict] = []


def _agent_run(run_id):
    run = Run.objects.filter(pk=run_id).select_related("submission").first()
    if run is None:
        raise HttpError(404, f"run {run_id} does not exist")
    return run


@agent_router.post("/heartbeat", response=answers({200: HeartbeatOut}, 401, 422), url_name="agent_heartbeat")
def heartbeat(request, payload: HeartbeatIn):
    """Records the agent and its worker; answers whether that worker should take jobs now."""
    answer = {}
    if payload.worker is not None:
        try:
            worker = fleet.record_heartbeat(request.auth, payload.worker.model_dump())
        except fleet.BadWorkerReport as exc:
            return Status(400, {"detail": str(exc)})
        answer = fleet.heartbeat_answer(worker)
    agent = record_heartbeat(request.auth, queues=payload.queues, inventory=payload.inventory, versions=payload.versions)
    judging_now = None if payload.judging is None else [(item.run_id, item.attempt) for item in payload.judging]
    recovery.note_judging(agent, judging_now)
    recovery.requeue_abandoned(agent, [(item.run_id, item.attempt) for item in payload.abandoned])
    try:
        # Agents call in regularly, which makes the heartbeat a natural clock for the sweeper
        # (at most one sweep per SWEEP_INTERVAL_SECONDS site-wide).
        recovery.sweep_if_due()
    except Exception:  # the sweeper must never cost an agent its heartbeat
        log.exception("sweeping runs failed")
    return {"ok": True, "detail": f"agent {agent.name} seen", **answer}


class StartIn(AgentReport):
    attempt: int
    agent: Optional[str] = None  # the name the agent calls itself: informative only
    worker: Optional[str] = None  # the worker (one GPU of the host) that will judge: recorded on the run
    gpu_uuid: Optional[str] = None
    harness_version: Optional[str] = None


class StartRefusedOut(ErrorOut):
    accept_jobs: Optional[bool] = None  # false: stop dequeuing (until a heartbeat says so, or retry_after_s)
    why: str = ""
    retry_after_s: Optional[int] = None


class StartOut(Schema):
    job_secret: str
    bundle_url: str
    result_url: str
    progress_url: str  # where the agent reports the stage it reached (POST, ProgressIn)
    options: dict


class ProgressIn(Schema):
    attempt: int
    stage: RunStage


def _refused(run_id, agent, action, exc, code):
    judging.record_refusal(run_id, agent, action, str(exc))
    return Status(code, {"detail": str(exc)})


@agent_router.post("/runs/{run_id}/start",
                   response=answers({200: StartOut, 403: StartRefusedOut}, 401, 404, 409, 422),
                   url_name="agent_run_start")
def start_run(request, run_id: int, payload: StartIn):
    """Take the run's current attempt: its secret, where its bundle and result go, the judging options.
    A worker that may not take runs now is refused (403 with `accept_jobs: false`) and the run goes
    back to the front of its queue."""
    _agent_run(run_id)
    try:
        if payload.worker is None:
            _, secret = judging.start_run(run_id, request.auth, payload.attempt)
        else:
            _, secret = fleet.start_on_worker(run_id, request.auth, payload.attempt, worker_name=payload.worker,
                                              gpu_uuid=payload.gpu_uuid or "", harness_version=payload.harness_version)
    except Run.DoesNotExist:
        raise HttpError(404, f"run {run_id} does not exist")
    except fleet.BadWorkerReport as exc:
        return Status(400, {"detail": str(exc)})
    except judging.RunConflict as exc:
        return _refused(run_id, request.auth, "run.start_refused", exc, 409)
    except fleet.WorkerRefused as exc:
        judging.record_refusal(run_id, request.auth, "run.start_refused", str(exc))
        return Status(403, exc.answer())
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.start_refused", exc, 403)
    return {"job_secret": secret, "bundle_url": reverse("api:agent_run_bundle", args=[run_id]),
            "result_url": reverse("api:agent_run_result", args=[run_id]),
            "progress_url": reverse("api:agent_run_progress", args=[run_id]), "options": judging.judging_options()}


JOB_SECRET = Header("", alias="X-Job-Secret", description="The secret `start` gave for the run's current attempt")


@agent_router.post("/runs/{run_id}/progress", response=answers({200: OkOut}, 401, 403, 404, 409, 422),
                   url_name="agent_run_progress")
def run_progress(request, run_id: int, payload: ProgressIn, job_secret: str = JOB_SECRET):
    """The stage the judging agent reached (compiling, checking, timing, profiling, self_test), for the
    submission's page. Only from the agent that started the run, with this attempt's secret."""
    _agent_run(run_id)
    try:
        judging.record_progress(run_id, request.auth, job_secret, payload.attempt, payload.stage)
    except judging.RunConflict as exc:
        return Status(409, {"detail": str(exc)})
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.progress_refused", exc, 403)
    return {"ok": True, "detail": f"run {run_id}: {payload.stage}"}


ZIP_ANSWER = {"responses": {200: {"description": "The submission's files as a zip",
                                  "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}}}}


@agent_router.get("/runs/{run_id}/bundle", response=answers({}, 401, 403, 404, 422), openapi_extra=ZIP_ANSWER,
                  url_name="agent_run_bundle")
def run_bundle(request, run_id: int, job_secret: str = JOB_SECRET):
    run = _agent_run(run_id)
    try:
        judging.check_agent_access(run, request.auth, job_secret)
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.bundle_refused", exc, 403)
    files = {f.path: f.content for f in run.submission.files.all()}
    response = HttpResponse(bundle_to_zip(files), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="submission-{run.submission_id}.zip"'
    return response


@agent_router.post("/runs/{run_id}/result", response=answers({200: OkOut}, 401, 403, 404, 409, 422),
                   url_name="agent_run_result")
def run_result(request, run_id: int, payload: RunResult, job_secret: str = JOB_SECRET):
    _agent_run(run_id)
    try:
        run = judging.record_result(run_id, request.auth, job_secret, payload.as_stored())
    except judging.RunConflict as exc:
        return Status(409, {"detail": str(exc)})
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.forged_report_refused", exc, 403)
    state = run.verdict if run.status == "done" else f"requeued (attempt {run.attempts})"
    return {"ok": True, "detail": f"run {run_id}: {state}"}


# ---- contestant side --------------------------------------------------------------------


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

    @staticmethod
    def from_run(run):
        return RunOut(
            id=run.pk, gpu_type=run.gpu_type.slug, status=run.status, verdict=run.verdict, attempts=run.attempts,
            speedup=run.speedup, reference_median_ms=run.reference_median_ms,
            candidate_median_ms=run.candidate_median_ms, flags=run.flags, created_at=run.created_at.isoformat(),
            finished_at=run.finished_at.isoformat() if run.finished_at else None, result=run.result,
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
            runs=[RunOut.from_run(r) for r in runs], ranked=ranked_runs.summary(runs),
            state=selectors.submission_state(submission).value,
            url=request.build_absolute_uri(f"/submissions/{submission.pk}/"),
        )


class IssueIn(Schema):
    season: Text
    title: Text = Field(max_length=column_length(Issue, "title"))
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
                      note: Text = Form("", description=f"At most {SUBMISSION_NOTE_MAX_CHARS} characters; a longer "
                                                        "note is refused (400)"),
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


class PullRequestIn(Schema):
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
