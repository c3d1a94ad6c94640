"""The agent side of the HTTP API: heartbeats, and a run's start, progress, bundle and result."""
import logging
from typing import List, Optional

import redis

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from ninja import Header, Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field, model_validator

from submissions import agent_protocol, queueing
from submissions.api.answers import ErrorOut, OkOut, answers
from submissions.api.auth import AgentAuth
from submissions.api.fields import JsonObjectIn, replace_nul
from submissions.bundles import bundle_to_zip
from submissions.models import Run, RunStage, SubmissionMode
from submissions.result_schema import RunResult
from submissions.services import agent_redis, cancelling, confirming, fleet, judging, profiles, recovery
from submissions.services.accounts import record_heartbeat


log = logging.getLogger(__name__)

agent_router = Router(tags=["agent"], auth=AgentAuth())


class AgentReport(JsonObjectIn):
    """What an agent sends is machine output (GPU names, logs of judged code): a NUL in it is replaced,
    not refused, so a heartbeat or a verdict is never lost to it. Its shape is checked: a JSON object,
    and so is each part of it that the schema declares an object."""

    @model_validator(mode="wrap")  # "wrap": a "before" validator would see ninja's wrapper, not the dict
    @classmethod
    def _replace_nul(cls, data, handler):
        return handler(replace_nul(data))


# The worker names fleet.worker_named stores, enforced here with a 422 and listed in the OpenAPI document.
WORKER_NAME_FIELD = dict(pattern=fleet.WORKER_NAME.pattern,
                         description="1-100 letters, digits, '.', '_', '-', '@', ':', starting with a letter or digit")


class WorkerGpuIn(JsonObjectIn):
    index: Optional[int] = None
    uuid: Optional[str] = None
    model: Optional[str] = None
    driver: Optional[str] = None
    memory_bytes: Optional[int] = None


class WorkerIn(JsonObjectIn):
    """One `profiler_agent work` process: its name (unique per agent), GPU (null on CPU), harness
    version and the run it is judging."""
    name: str = Field(**WORKER_NAME_FIELD)
    gpu: Optional[WorkerGpuIn] = None
    harness_version: Optional[str] = None
    current_run: Optional[int] = None


class JudgingIn(JsonObjectIn):
    # bounded as database keys are: a larger number is no run's, and would overflow the query
    run_id: int = Field(ge=1, le=2**62)
    attempt: int = Field(ge=0, le=2**31)


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


class JudgingOut(Schema):
    run_id: int
    attempt: int


class HeartbeatOut(OkOut):
    # the list this host's workers move the jobs they take into (profiler_agent/worker/job_claims.py)
    claim_list: Optional[str] = None
    accept_jobs: bool = True
    why: str = ""
    outdated: bool = False
    outdated_for: List[dict] = []
    # agent_protocol.STOP_JUDGING: of the heartbeat's `judging`, the attempts an organizer cancelled; the
    # worker stops judging them now (an agent that ignores it judges to the end; its report is refused)
    stop_judging: List[JudgingOut] = Field([], description="The attempts of this heartbeat's `judging` whose run "
                                           "was cancelled: stop judging them now and report nothing")


def _agent_run(run_id):
    run = Run.objects.filter(pk=run_id).select_related("submission", "gpu_type").first()
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
    answer[agent_protocol.STOP_JUDGING] = cancelling.attempts_to_stop(agent, judging_now)
    recovery.requeue_abandoned(agent, [(item.run_id, item.attempt) for item in payload.abandoned])
    try:
        # Agents call in regularly, which makes the heartbeat a natural clock for the sweeper
        # (at most one sweep per SWEEP_INTERVAL_SECONDS site-wide).
        recovery.sweep_if_due()
    except Exception:  # the sweeper must never cost an agent its heartbeat
        log.exception("sweeping runs failed")
    return {"ok": True, "detail": f"agent {agent.name} seen", "claim_list": agent_redis.claim_list(agent.name), **answer}


class StartIn(AgentReport):
    attempt: int
    agent: Optional[str] = None  # the name the agent calls itself: informative only
    # the worker (one GPU of the host) that will judge: recorded on the run
    worker: Optional[str] = Field(None, **WORKER_NAME_FIELD)
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
    profile_file_url: Optional[str] = Field(None, description="A profile run's: where its .ncu-rep goes (POST, "
                                            "raw bytes, ?attempt=n) before its result; null for every other run")


class ProgressIn(JsonObjectIn):
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
    run = _agent_run(run_id)
    # whatever the answer, the job the host took for this attempt leaves its claim list: started, or
    # refused and (for a worker that may not take it) handed back as a new attempt
    claimed_job = queueing.job_id(run.pk, payload.attempt, run.gpu_type.slug) if payload.attempt > 0 else ""
    try:
        if payload.worker is None:
            _, secret = judging.start_run(run_id, request.auth, payload.attempt, require_claim=True)
        else:
            _, secret = fleet.start_on_worker(run_id, request.auth, payload.attempt, worker_name=payload.worker,
                                              gpu_uuid=payload.gpu_uuid or "", harness_version=payload.harness_version,
                                              require_claim=True)
    except Run.DoesNotExist:
        raise HttpError(404, f"run {run_id} does not exist")
    except fleet.BadWorkerReport as exc:
        return Status(400, {"detail": str(exc)})
    except judging.RunConflict as exc:
        return _refused(run_id, request.auth, "run.start_refused", exc, 409)
    except fleet.WorkerRefused as exc:
        # a refused second judging rolled back with the start: its run goes back to its queue's front now
        confirming.hand_back(run_id, request.auth, payload.attempt)
        judging.record_refusal(run_id, request.auth, "run.start_refused", str(exc))
        return Status(403, exc.answer())
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.start_refused", exc, 403)
    finally:
        _release_claim(request.auth, claimed_job)
    profile_file_url = (reverse("api:agent_run_profile_file", args=[run_id])
                        if run.submission.mode == SubmissionMode.PROFILE else None)
    return {"job_secret": secret, "bundle_url": reverse("api:agent_run_bundle", args=[run_id]),
            "result_url": reverse("api:agent_run_result", args=[run_id]),
            "progress_url": reverse("api:agent_run_progress", args=[run_id]), "options": judging.judging_options(run),
            "profile_file_url": profile_file_url}


def _release_claim(agent, job_id):
    claims = agent_redis.claim_list(agent.name)
    if claims and job_id:
        try:
            queueing.release_claim(claims, job_id)
        except redis.RedisError as exc:  # the sweep clears it once the run is no longer queued
            log.warning("could not clear job %s from %s: %s", job_id, claims, exc)


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


PROFILE_FILE_BODY = {"requestBody": {"required": True, "description": "The .ncu-rep, gzip-compressed (or as "
                                                                     "Nsight Compute wrote it)",
                                     "content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                         "format": "binary"}}}}}


@agent_router.post("/runs/{run_id}/profile-file", response=answers({200: OkOut}, 401, 403, 404, 409, 413, 422),
                   openapi_extra=PROFILE_FILE_BODY, url_name="agent_run_profile_file")
def run_profile_file(request, run_id: int, attempt: int = Query(..., ge=0, le=2**31), job_secret: str = JOB_SECRET):
    """A profile run's .ncu-rep, gzip-compressed (or as written), before its result: at most
    PROFILE_FILE_MAX_BYTES as sent and PROFILE_REPORT_MAX_BYTES decompressed; only from the agent judging the
    run's current attempt, with its secret, while it runs. A second one replaces the first."""
    _agent_run(run_id)
    data = request.body
    if len(data) > settings.PROFILE_FILE_MAX_BYTES:
        return Status(413, {"detail": f"{len(data)} bytes: the site keeps a profile file of at most "
                                      f"{settings.PROFILE_FILE_MAX_BYTES} bytes"})
    if not data:
        raise HttpError(422, "the profile file is empty")
    try:
        data = profiles.decompressed_report(data, settings.PROFILE_REPORT_MAX_BYTES)
    except profiles.ProfileFileRefused as exc:
        if exc.status == 422:
            raise HttpError(422, str(exc)) from None
        return Status(exc.status, {"detail": str(exc)})
    try:
        profiles.store_profile_file(run_id, request.auth, job_secret, attempt, data)
    except judging.LateReport as exc:
        return Status(409, {"detail": str(exc).replace("this late report is kept as evidence", "its file is not kept")})
    except judging.RunConflict as exc:
        return Status(409, {"detail": str(exc)})
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.profile_file_refused", exc, 403)
    return {"ok": True, "detail": f"run {run_id}: a profile file of {len(data)} bytes is kept"}  # decompressed


ZIP_ANSWER = {"responses": {200: {"description": "The submission's files as a zip",
                                  "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}}}}


@agent_router.get("/runs/{run_id}/bundle", response=answers({}, 401, 403, 404, 409, 422), openapi_extra=ZIP_ANSWER,
                  url_name="agent_run_bundle")
def run_bundle(request, run_id: int, job_secret: str = JOB_SECRET):
    run = _agent_run(run_id)
    try:
        judging.check_agent_access(run, request.auth, job_secret)
    except judging.LateReport as exc:  # handed back or cancelled since its start: nothing to judge
        return Status(409, {"detail": str(exc).replace("this late report is kept as evidence", "its bundle is not served")})
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
    except judging.LateReport as exc:
        judging.record_late_report(run_id, request.auth, exc, payload.as_stored())
        return Status(409, {"detail": str(exc)})
    except judging.AgentRefused as exc:
        return _refused(run_id, request.auth, "run.forged_report_refused", exc, 403)
    state = run.verdict if run.status == "done" else f"requeued (attempt {run.attempts})"
    return {"ok": True, "detail": f"run {run_id}: {state}"}
