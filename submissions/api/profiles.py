"""Profile reports in the API (services/profiles.py): ask for a profile of one's passed run, read a profile
run's report, download its .ncu-rep. With a personal token; a report and its file are their owner's and the
organizers' alone."""
from typing import List, Literal, Optional

from django.http import HttpResponse
from django.utils.translation import gettext as _
from ninja import Router, Schema, Status
from pydantic import Field

from submissions import profile_reports, selectors
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.contestant import _too_many
from submissions.api.submission_answers import RunStatusName, SubmissionOut, VerdictName
from submissions.models import ProfileFile, Run, SubmissionMode, SubmissionSource
from submissions.services import profiles, submitting

profile_router = Router(tags=["profiles"], auth=ContestantTokenAuth())

ModelName = Optional[Literal[profile_reports.MODELS]]


class StallOut(Schema):
    reason: str = Field(description="Nsight Compute's name of the warp state (long_scoreboard, barrier, ...)")
    label: str = Field(description="What it means, in the reader's language")
    share_pct: Optional[float] = Field(description="Its share of every cycle a warp spent between two issued "
                                                   "instructions")
    cycles_per_instruction: Optional[float]


class KernelOut(Schema):
    model: ModelName = Field(description="candidate or reference; null: the profiler did not say")
    launch: Optional[int] = Field(description="The launch's number in the profile (both models' launches in order)")
    name: str
    duration_ms: Optional[float]
    grid: Optional[List[int]] = Field(description="Blocks per grid, x y z")
    block: Optional[List[int]] = Field(description="Threads per block, x y z")
    registers: Optional[int] = Field(description="Registers per thread")
    achieved_occupancy_pct: Optional[float]
    theoretical_occupancy_pct: Optional[float]
    sm_pct: Optional[float] = Field(description="Compute (SM) throughput, % of peak")
    memory_pct: Optional[float] = Field(description="Memory throughput, % of peak (the busiest memory unit)")
    dram_pct: Optional[float] = Field(description="DRAM throughput, % of peak")
    l2_pct: Optional[float] = Field(description="L2 cache throughput, % of peak")
    stalls: List[StallOut] = Field(description="The top 3 reasons warps waited, largest first")
    flops: Optional[float] = Field(description="FP32, FP64 and FP16 operations of the SM's pipes (an FMA as two), as "
                                               "Nsight Compute's roofline counts them: tensor-core work is not in it")
    dram_bytes: Optional[float]
    flop_per_s: Optional[float]
    arithmetic_intensity: Optional[float] = Field(description="FLOP per DRAM byte")


class ModelSummaryOut(Schema):
    kernels: Optional[int]
    duration_ms: Optional[float] = Field(description="The profiled kernels' durations summed")
    capped: bool = Field(description="The profiler's cap on kernels may have left some of this model's out")


class ReportFileOut(Schema):
    bytes: Optional[int]
    sha256: Optional[str]
    stored: Optional[bool] = Field(description="Whether the site keeps it (false: `why`)")
    why: Optional[str]
    url: Optional[str] = Field(None, description="Where it is downloaded (null: the site has none)")


class ProfileReportOut(Schema):
    available: bool = Field(description="false: nothing was profiled, `reason` says why (a CPU host has no "
                                        "profiler; a MetaX host is not supported; no ncu on the host)")
    tool: Optional[str]
    version: Optional[str]
    vendor: Optional[str]
    reason: Optional[str]
    kernels_per_model: Optional[int]
    sections: List[str]
    clock_control: Optional[str]
    metrics: Optional[str]
    kernels: List[KernelOut]
    models: dict = Field(description="Per model (candidate, reference): {kernels, duration_ms, capped}")
    report_file: Optional[ReportFileOut]
    duration_s: Optional[float] = Field(description="The profiled run's wall time under the profiler")


class ProfileOut(Schema):
    run: int
    submission: int
    profile_of: Optional[int] = Field(description="The run this profile was asked for (null: submitted in "
                                                  "profile mode)")
    gpu_type: str
    status: RunStatusName
    verdict: VerdictName = Field(description="The correctness trials' verdict; empty until the run is done")
    device: str
    report: Optional[ProfileReportOut] = Field(description="Null until the run is done, or when its agent made "
                                                           "no report")
    url: str = Field(description="The report's page")


def profile_run_or_404(request, run_id):
    """A profile run the token's account may read, or None."""
    run = Run.objects.select_related("submission__contestant", "gpu_type").filter(pk=run_id).first()
    if run is None or run.submission.mode != SubmissionMode.PROFILE or not profiles.can_see_profile(request.auth.user, run):
        return None
    return run


def _not_found(run_id):
    return Status(404, {"detail": _("run %(id)s is no profile run of yours") % {"id": run_id}})


def profile_out(request, run):
    report = profile_reports.with_stored_file(profile_reports.report(run), profiles.stored_file(run))
    if report is not None and report["report_file"] is not None and report["report_file"]["stored"]:
        report["report_file"]["url"] = request.build_absolute_uri(f"/api/v1/runs/{run.pk}/profile/report")
    return ProfileOut(run=run.pk, submission=run.submission_id, profile_of=run.submission.profile_of_id,
                      gpu_type=run.gpu_type.slug, status=run.status, verdict=run.verdict, device=run.device_name,
                      report=report, url=request.build_absolute_uri(f"/runs/{run.pk}/profile/"))


@profile_router.post("/runs/{run_id}/profile", response=answers({201: SubmissionOut}, 401, 403, 404, 409, 422, 429),
                     url_name="run_profile_request")
def request_profile(request, run_id: int, response: HttpResponse):
    """Ask for a profile of a passed run of yours: a `profile` submission of its files on its GPU type, whose run
    profiles both models' kernels (never ranked, reviewed or public). Beyond PROFILE_SUBMISSIONS_PER_HOUR / _DAY in
    the season: 429 with Retry-After. Another's run: 403; a run not passed, or a profile run: 409."""
    try:
        submission = profiles.request_profile(run_id, request.auth.user, source=SubmissionSource.API)
    except Run.DoesNotExist:
        return Status(404, {"detail": _("run %(id)s does not exist") % {"id": run_id}})
    except profiles.NotYours as exc:
        return Status(403, {"detail": str(exc)})
    except profiles.ProfileRefused as exc:
        return Status(409, {"detail": str(exc)})
    except submitting.TooManyRequests as exc:
        return _too_many(response, exc)
    except submitting.AccessRefused as exc:
        return Status(403, {"detail": str(exc)})
    except submitting.SubmissionRefused as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, SubmissionOut.from_submission(request, selectors.submission_with_runs(submission.pk)))


@profile_router.get("/runs/{run_id}/profile", response=answers({200: ProfileOut}, 401, 404, 422), url_name="run_profile")
def read_profile(request, run_id: int):
    """A profile run's report: per kernel of each model, its duration, launch configuration, occupancy,
    throughputs, top stalls and roofline position. Yours (or, for organizers, anyone's) alone."""
    run = profile_run_or_404(request, run_id)
    if run is None:
        return _not_found(run_id)
    return profile_out(request, run)


REP_ANSWER = {"responses": {200: {"description": "The .ncu-rep, as Nsight Compute wrote it",
                                  "content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                      "format": "binary"}}}}}}


@profile_router.get("/runs/{run_id}/profile/report", response=answers({}, 401, 404, 422), openapi_extra=REP_ANSWER,
                    url_name="run_profile_file")
def download_profile_file(request, run_id: int):
    """The profile run's .ncu-rep, to open in Nsight Compute. Yours (or, for organizers, anyone's) alone."""
    run = profile_run_or_404(request, run_id)
    if run is None:
        return _not_found(run_id)
    stored = ProfileFile.objects.filter(run_id=run.pk).first()
    if stored is None:
        return Status(404, {"detail": _("run %(id)s has no profiler report file") % {"id": run_id}})
    return profile_reports.ncu_rep_download(run, stored)
