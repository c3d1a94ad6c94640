"""HTTP API of the dataset for organizers (mounted under /api/v1/): exports and weights.

Authenticated with a personal API token like the contestant side; only an organizer's token is
served, every other one gets 403.
"""
from typing import Annotated, List, Optional

from django.http import FileResponse, HttpResponse
from django.utils.translation import gettext as _
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from submissions import dataset_export, selectors
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import JsonObjectIn, NonBlankText, Text
from submissions.models import DatasetExport, Issue, Season
from submissions.rules import weights
from submissions.services import datasets, weighting

organizer_router = Router(tags=["organizer"], auth=ContestantTokenAuth())
# the datasets organizers published after their season's end, for everyone (services/datasets.publish)
published_router = Router(tags=["datasets"])

TAR_ANSWER = {"responses": {200: {"description": "The dataset as a .tar.gz (docs/dataset.md)",
                                  "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}}}}
JSONL_ANSWER = {"responses": {200: {"description": "The dataset's manifest: one JSON object a line, one line a sample",
                                    "content": {"application/jsonl": {"schema": {"type": "string"}}}}}}


def _organizer(request):
    if not selectors.is_organizer(request.auth.user):
        raise HttpError(403, _("organizers only"))


def _season(code):
    season = Season.objects.filter(code=code).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    return season


def _export(season, number):
    export = DatasetExport.objects.select_related("season", "created_by").filter(season=season, number=number).first()
    if export is None:
        raise HttpError(404, _("season %(season)s has no dataset export %(number)s")
                        % {"season": season.code, "number": number})
    return export


class LeftOutOut(Schema):
    sample: str
    why: str


class DatasetExportOut(Schema):
    season: str
    number: int
    name: str
    created_at: str
    created_by: Optional[str]
    sample_count: int
    as_of: Optional[str]
    manifest_sha256: str
    archive_sha256: str
    archive_bytes: int
    same_content_as: Optional[int]
    archive_url: str
    manifest_url: str
    left_out: List[LeftOutOut] = Field(description="accepted samples whose runs did not pass, left out, and why")
    included: List[str] = Field(description="samples whose runs did not pass that the organizer included")
    published_at: Optional[str] = Field(description="when it was published for everyone (null: organizers only)")

    @staticmethod
    def of(request, export):
        base = f"/api/v1/seasons/{export.season.code}/datasets/{export.number}"
        same = datasets.identical_to(export)
        return DatasetExportOut(
            season=export.season.code, number=export.number, name=export.name, created_at=export.created_at.isoformat(),
            created_by=export.created_by.get_username() if export.created_by else None,
            sample_count=export.sample_count, as_of=dataset_export.iso(export.as_of),
            manifest_sha256=export.manifest_sha256, archive_sha256=export.archive_sha256,
            archive_bytes=export.archive_bytes, same_content_as=same.number if same else None,
            archive_url=request.build_absolute_uri(f"{base}/archive"),
            manifest_url=request.build_absolute_uri(f"{base}/manifest"),
            left_out=[LeftOutOut(sample=str(e.get("sample", "")), why=str(e.get("why", ""))) for e in export.left_out],
            included=[str(code) for code in export.included], published_at=dataset_export.iso(export.published_at))


class ExportIn(JsonObjectIn):
    reason: NonBlankText = Field(max_length=2000, description="Why (kept in the audit trail)")
    include: List[Annotated[Text, Field(max_length=32)]] = Field([], max_length=1000, description=(
        "issue codes of accepted samples whose runs did not pass, exported anyway"))


@organizer_router.get("/seasons/{code}/datasets", response=answers({200: List[DatasetExportOut]}, 401, 403, 404),
                      url_name="dataset_exports")
def list_exports(request, code: str):
    """The season's dataset exports, newest first."""
    _organizer(request)
    season = _season(code)
    return [DatasetExportOut.of(request, e) for e in season.dataset_exports.select_related("season", "created_by")]


@organizer_router.post("/seasons/{code}/datasets", response=answers({201: DatasetExportOut}, 401, 403, 404, 422),
                       url_name="dataset_export_create")
def create_export(request, code: str, payload: ExportIn):
    """Export the season's accepted samples as its next numbered dataset (kept; audited with the reason).
    The body is a JSON object, `{"reason": "..."}` or `{"reason": "...", "include": ["ICTXSZ"]}`: accepted
    samples whose runs did not pass are left out (`left_out` says which and why) unless `include` names them."""
    _organizer(request)
    season = _season(code)
    try:
        export = datasets.export_season(season, actor=request.auth.user, reason=payload.reason, include=payload.include)
    except dataset_export.DatasetExportError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, DatasetExportOut.of(request, export))


@organizer_router.get("/seasons/{code}/datasets/{number}", response=answers({200: DatasetExportOut}, 401, 403, 404, 422),
                      url_name="dataset_export")
def read_export(request, code: str, number: int):
    _organizer(request)
    return DatasetExportOut.of(request, _export(_season(code), number))


@organizer_router.get("/seasons/{code}/datasets/{number}/archive", response=answers({}, 401, 403, 404, 422),
                      openapi_extra=TAR_ANSWER, url_name="dataset_export_archive")
def export_archive(request, code: str, number: int):
    _organizer(request)
    export = _export(_season(code), number)
    path = datasets.archive_path(export)
    if not path.exists():
        raise HttpError(404, _("the files of %(export)s are missing on the server") % {"export": export.name})
    return FileResponse(open(path, "rb"), as_attachment=True,
                        filename=f"{export.name}.tar.gz", content_type="application/gzip")


@organizer_router.get("/seasons/{code}/datasets/{number}/manifest", response=answers({}, 401, 403, 404, 422),
                      openapi_extra=JSONL_ANSWER, url_name="dataset_export_manifest")
def export_manifest(request, code: str, number: int):
    _organizer(request)
    export = _export(_season(code), number)
    path = datasets.unpacked_path(export) / dataset_export.MANIFEST
    if not path.exists():
        raise HttpError(404, _("the files of %(export)s are missing on the server") % {"export": export.name})
    data = path.read_bytes()
    return HttpResponse(data, content_type="application/jsonl; charset=utf-8")


class WeightRuleOut(Schema):
    name: str
    label: str
    help: str


class WeightsOut(Schema):
    season: str
    rule: str
    settings: dict
    rules: List[WeightRuleOut]


class WeightsIn(JsonObjectIn):
    rule: Text = Field(max_length=32)
    settings: dict = {}
    reason: NonBlankText = Field(max_length=2000, description="Why (kept in the audit trail)")


def _weights_out(season):
    return WeightsOut(season=season.code, rule=season.dataset_weight_rule,
                      settings=weights.rule_of(season).settings,
                      rules=[WeightRuleOut(name=n, label=str(label), help=str(help)) for n, label, help in weights.catalog()])


@organizer_router.get("/seasons/{code}/weights", response=answers({200: WeightsOut}, 401, 403, 404),
                      url_name="dataset_weights")
def read_weights(request, code: str):
    """The season's dataset weight rule, its settings (defaults filled in) and the rules to choose from."""
    _organizer(request)
    return _weights_out(_season(code))


@organizer_router.put("/seasons/{code}/weights", response=answers({200: WeightsOut}, 401, 403, 404, 422),
                      url_name="dataset_weights_change")
def change_weights(request, code: str, payload: WeightsIn):
    """Choose the season's weight rule and its settings, with a reason; 400 naming the setting at fault
    (audited)."""
    _organizer(request)
    season = _season(code)
    try:
        weighting.change_weights(season, payload.rule, payload.settings, actor=request.auth.user, reason=payload.reason)
    except weights.WeightSettingsError as exc:
        return Status(400, {"detail": str(exc)})
    return _weights_out(season)


class SampleWeightIn(JsonObjectIn):
    weight: Optional[float] = Field(None, ge=0, le=weights.MAX_WEIGHT,
                                    description="null: the season's rule decides again")
    reason: NonBlankText = Field(max_length=2000, description="Why (kept in the audit trail)")


class SampleWeightOut(Schema):
    issue: str
    weight: float
    source: str


@organizer_router.put("/issues/{code}/weight", response=answers({200: SampleWeightOut}, 401, 403, 404, 422),
                      url_name="sample_weight_change")
def change_sample_weight(request, code: str, payload: SampleWeightIn):
    """Set the weight of an issue's sample by hand, with a reason (audited)."""
    _organizer(request)
    issue = Issue.objects.select_related("season").filter(code=code.strip().upper()).first()
    if issue is None:
        raise HttpError(404, _("issue %(issue)s does not exist") % {"issue": code})
    try:
        weighting.set_sample_weight(issue, payload.weight, actor=request.auth.user, reason=payload.reason)
    except weights.WeightSettingsError as exc:
        return Status(400, {"detail": str(exc)})
    issue.season.refresh_from_db()
    weight = selectors.sample_weight(issue)
    return SampleWeightOut(issue=issue.code, weight=weight.value, source=weight.source)


class PublishIn(JsonObjectIn):
    reason: NonBlankText = Field(max_length=2000)


@organizer_router.post("/seasons/{code}/datasets/{number}/publish",
                       response=answers({200: DatasetExportOut}, 401, 403, 404, 422), url_name="dataset_export_publish")
def publish_export(request, code: str, number: int, payload: PublishIn):
    """Publish the export for everyone (after the season's end; audited): `{"reason": "..."}`."""
    _organizer(request)
    export = _export(_season(code), number)
    try:
        datasets.publish(export, actor=request.auth.user, reason=payload.reason)
    except datasets.PublishError as exc:
        return Status(400, {"detail": str(exc)})
    export.refresh_from_db()
    return DatasetExportOut.of(request, export)


class PublishedDatasetOut(Schema):
    season: str
    number: int
    name: str
    published_at: str
    sample_count: int
    as_of: Optional[str]
    manifest_sha256: str
    archive_sha256: str
    archive_bytes: int
    archive_url: str


def _published(season, number):
    export = selectors.published_exports(season).filter(number=number).select_related("season").first()
    if export is None:
        raise HttpError(404, _("season %(season)s has no published dataset %(number)s")
                        % {"season": season.code, "number": number})
    return export


@published_router.get("/seasons/{code}/datasets/published", response=answers({200: List[PublishedDatasetOut]}, 404),
                      url_name="published_datasets")
def list_published(request, code: str):
    """The season's datasets published for everyone, newest first (no token needed)."""
    season = _season(code)
    return [PublishedDatasetOut(
        season=season.code, number=e.number, name=e.name, published_at=e.published_at.isoformat(),
        sample_count=e.sample_count, as_of=dataset_export.iso(e.as_of), manifest_sha256=e.manifest_sha256,
        archive_sha256=e.archive_sha256, archive_bytes=e.archive_bytes,
        archive_url=request.build_absolute_uri(f"/api/v1/seasons/{season.code}/datasets/published/{e.number}/archive"))
        for e in selectors.published_exports(season)]


@published_router.get("/seasons/{code}/datasets/published/{number}/archive", response=answers({}, 404, 422),
                      openapi_extra=TAR_ANSWER, url_name="published_dataset_archive")
def published_archive(request, code: str, number: int):
    export = _published(_season(code), number)
    path = datasets.archive_path(export)
    if not path.exists():
        raise HttpError(404, _("the files of %(export)s are missing on the server") % {"export": export.name})
    return FileResponse(open(path, "rb"), as_attachment=True,
                        filename=f"{export.name}.tar.gz", content_type="application/gzip")
