"""HTTP API of benchmark runs (mounted under /api/v1/): a GPU benchmarked on a dataset by
`python -m profiler_agent bench DATASET --upload SITE --token T` (docs/dataset.md, "Benchmarking a GPU").
Any signed-in user's personal API token; none or a wrong one gets 401."""
from typing import List, Literal, Optional

from django.db import transaction
from django.utils.translation import gettext as _
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import JsonObjectIn, Text
from submissions.models import BenchmarkRun, DatasetExport, Season
from submissions.rules.weights import weighted_geomean

benchmark_router = Router(tags=["benchmark"], auth=ContestantTokenAuth())
MAX_SAMPLES = 10_000


class DatasetIn(JsonObjectIn):
    name: Text = Field(max_length=200)
    season: Optional[Text] = Field(None, max_length=32)
    as_of: Optional[Text] = Field(None, max_length=40)
    checksum: Text = Field(pattern=r"^[0-9a-f]{64}$")
    sample_count: int = Field(ge=0, le=MAX_SAMPLES)


class DeviceIn(JsonObjectIn):
    kind: Text = Field(pattern=r"^(cpu|cuda)$")
    name: Optional[Text] = Field(None, max_length=200)


class SampleIn(JsonObjectIn):
    id: Text = Field(max_length=64)
    title: Optional[Text] = Field(None, max_length=500)
    weight: float = Field(ge=0, le=1000)
    status: Text = Field(max_length=32)
    reason: Optional[Text] = Field(None, max_length=2000)
    flags: List[Text] = Field(default_factory=list, max_length=50)
    reference_ms: Optional[float] = Field(None, gt=0)
    candidate_ms: Optional[float] = Field(None, gt=0)
    speedup: Optional[float] = Field(None, gt=0)
    baseline_ms: Optional[float] = Field(None, gt=0)
    relative_time: Optional[float] = Field(None, gt=0)
    not_scored: Optional[Text] = Field(None, max_length=200)
    device_name: Optional[Text] = Field(None, max_length=200)
    judged_at: Optional[Text] = Field(None, max_length=40)
    # what the agent measured (the roofline position): achieved and peak, None where not measured
    tflops: Optional[float] = Field(None, ge=0, le=1e6)
    gbps: Optional[float] = Field(None, ge=0, le=1e7)
    peak_tflops: Optional[float] = Field(None, gt=0, le=1e6)
    peak_gbps: Optional[float] = Field(None, gt=0, le=1e7)


class ScoresIn(JsonObjectIn):
    baseline: Optional[Text] = Field(None, max_length=200)


class BenchmarkRunIn(JsonObjectIn):
    schema_: Literal[1] = Field(alias="schema")
    # false is refused by the upload, which names how many samples are missing
    complete: bool = Field(json_schema_extra={"const": True})
    dataset: DatasetIn
    device: DeviceIn
    harness_version: Text = Field(max_length=32)
    agent_version: Text = Field("", max_length=32)
    scores: ScoresIn
    samples: List[SampleIn] = Field(max_length=MAX_SAMPLES,
                                    description="dataset.sample_count samples, each id once (else 422)")


class BenchmarkRunOut(Schema):
    id: int
    gpu_name: str
    dataset_name: str
    dataset_version: Optional[int]
    dataset_checksum: str
    season: Optional[str]
    baseline: str
    sample_count: int
    passed_count: int
    speedup_score: Optional[float]
    relative_time_score: Optional[float]
    created_at: str
    uploaded_by: Optional[str] = Field(description="The uploader's display name; null: the account is gone")
    uploaded_by_organizer: bool

    @staticmethod
    def of(run):
        return BenchmarkRunOut(
            id=run.pk, gpu_name=run.gpu_name, dataset_name=run.dataset_name, dataset_version=run.dataset_version,
            dataset_checksum=run.dataset_checksum, season=run.season.code if run.season else None,
            baseline=run.baseline, sample_count=run.sample_count, passed_count=run.passed_count,
            speedup_score=run.speedup_score, relative_time_score=run.relative_time_score,
            created_at=run.created_at.isoformat(),
            uploaded_by=run.contestant.display_name if run.contestant else None,
            uploaded_by_organizer=bool(run.contestant and run.contestant.is_organizer))


@benchmark_router.post("/benchmark-runs", response=answers({201: BenchmarkRunOut}, 401, 422),
                       url_name="benchmark_run_create")
def create_benchmark_run(request, payload: BenchmarkRunIn):
    if payload.schema_ != 1:
        raise HttpError(422, _("benchmark result schema %(schema)s is not 1") % {"schema": payload.schema_})
    if not payload.complete or len(payload.samples) != payload.dataset.sample_count:
        raise HttpError(422, _("the benchmark run is incomplete: %(done)s of %(all)s samples")
                        % {"done": len(payload.samples), "all": payload.dataset.sample_count})
    if len({s.id for s in payload.samples}) != len(payload.samples):
        raise HttpError(422, _("a sample comes twice"))
    passed = [s for s in payload.samples if s.status == "passed" and s.speedup]
    timed = [s for s in passed if s.relative_time]
    export = (DatasetExport.objects.filter(manifest_sha256=payload.dataset.checksum)
              .select_related("season").order_by("number").first())
    season = export.season if export else Season.objects.filter(code=payload.dataset.season or "").first()
    with transaction.atomic():
        run = BenchmarkRun.objects.create(
            contestant=request.auth, gpu_name=payload.device.name or payload.device.kind,
            device_kind=payload.device.kind, dataset_name=payload.dataset.name, season=season,
            dataset_export=export, dataset_version=export.number if export else None,
            dataset_checksum=payload.dataset.checksum, harness_version=payload.harness_version,
            agent_version=payload.agent_version, baseline=payload.scores.baseline or "",
            sample_count=len(payload.samples), passed_count=len(passed),
            speedup_score=weighted_geomean([(s.speedup, s.weight) for s in passed]),
            relative_time_score=weighted_geomean([(s.relative_time, s.weight) for s in timed]),
            samples=[s.model_dump() for s in payload.samples])
    return Status(201, BenchmarkRunOut.of(run))


@benchmark_router.get("/benchmark-runs/{run_id}", response=answers({200: BenchmarkRunOut}, 401, 404, 422),
                      url_name="benchmark_run")
def benchmark_run(request, run_id: int):
    run = BenchmarkRun.objects.select_related("season", "contestant__user").filter(pk=run_id).first()
    if run is None:
        raise HttpError(404, _("benchmark run %(id)s does not exist") % {"id": run_id})
    return BenchmarkRunOut.of(run)
