"""Exporting a season's dataset: built (submissions/dataset_export.py), kept on disk, numbered, audited.

Each export lives in its own folder, DATASET_EXPORT_DIR/<season>/v<number>/, holding the dataset
unpacked (`<name>/`) and packed (`<name>.tar.gz`). Numbers go 1, 2, 3... per season; the season's row
is locked while one is taken, so two organizers exporting at once get two numbers. Nothing is deleted:
the files are written under a temporary name and renamed into place before the row commits; a folder
left by an export whose transaction failed is moved aside (`v<n>.orphan-<token>`), never overwritten.
"""
import hashlib
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from submissions import dataset_export, freeze_reads
from submissions.models import DatasetExport, Season
from submissions.services import audit, reasons


def root():
    return Path(settings.DATASET_EXPORT_DIR)


def folder_of(export):
    return root() / export.folder


def archive_path(export):
    return folder_of(export) / f"{dataset_export.dataset_name(export.season)}.tar.gz"


def unpacked_path(export):
    """The folder holding the export's files (README.md, dataset.json, manifest.jsonl, ...)."""
    return folder_of(export) / dataset_export.dataset_name(export.season)


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _write_export(target, dataset, packed):
    """Write the dataset into `target` (a new folder) through a temporary sibling and one rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".{target.name}.partial-{secrets.token_hex(4)}"
    for path, content in dataset.files.items():
        _write(temporary / dataset.root / path, content)
    _write(temporary / f"{dataset.root}.tar.gz", packed)
    if target.exists():  # left by an export whose row never committed: kept, out of the way
        target.rename(target.parent / f"{target.name}.orphan-{secrets.token_hex(4)}")
    temporary.rename(target)


@transaction.atomic
def export_season(season, *, actor=None, reason="", include=()):
    """Export the season's accepted samples as its next numbered dataset; returns the DatasetExport (its
    `left_out` and `included`: dataset_export.build's samples whose runs did not pass, left out unless
    `include` names them). Raises
    dataset_export.DatasetExportError (nothing written, nothing numbered) when a sample cannot be
    exported, or the reason is missing. Audited as `dataset.exported`."""
    if not reason.strip():
        raise dataset_export.DatasetExportError(_("exporting a dataset needs a reason (kept in the audit trail)"))
    if reasons.too_long(reason):
        raise dataset_export.DatasetExportError(reasons.too_long(reason))
    season = Season.objects.select_for_update().get(pk=season.pk)
    dataset = dataset_export.build(season, include)
    packed = dataset_export.archive(dataset)
    number = (DatasetExport.objects.filter(season=season).aggregate(n=Max("number"))["n"] or 0) + 1
    folder = f"{dataset_export.safe_name(season)}/v{number}"
    _write_export(root() / folder, dataset, packed)
    export = DatasetExport.objects.create(
        season=season, number=number, created_by=actor, sample_count=dataset.sample_count, as_of=dataset.as_of,
        manifest_sha256=dataset.manifest_sha256, archive_sha256=hashlib.sha256(packed).hexdigest(),
        archive_bytes=len(packed), folder=folder,
        left_out=[{"sample": code, "why": why} for code, why in dataset.left_out], included=list(dataset.included))
    same_as = (DatasetExport.objects.filter(season=season, archive_sha256=export.archive_sha256)
               .exclude(pk=export.pk).order_by("number").values_list("number", flat=True).first())
    audit.record("dataset.exported", season, actor=actor, reason=reason.strip(), after={
        "number": number, "sample_count": export.sample_count, "as_of": dataset_export.iso(dataset.as_of),
        "manifest_sha256": export.manifest_sha256, "archive_sha256": export.archive_sha256, "folder": folder,
        "same_content_as": same_as, "left_out": export.left_out, "included": export.included})
    return export


def identical_to(export):
    """The earliest other export of the season with the same bytes, or None."""
    return (DatasetExport.objects.filter(season_id=export.season_id, archive_sha256=export.archive_sha256)
            .exclude(pk=export.pk).order_by("number").first())


class PublishError(ValueError):
    """The export cannot be published now; the message says why."""


def held_by_freeze(export):
    """Whether the export reflects a review or run from after its season's scoreboard froze, while it is
    frozen: published, it would show the public the acceptances and speedups the frozen board hides."""
    frozen_at = freeze_reads.frozen_at(export.season)
    return frozen_at is not None and export.as_of is not None and export.as_of > frozen_at


@transaction.atomic
def publish(export, *, actor=None, reason=""):
    """Make the export downloadable by everyone (the season's dataset page, the public API), once its
    season has ended, as the contest agreement promises an open dataset; audited as `dataset.published`.
    Publishing one already published changes nothing (False)."""
    export = DatasetExport.objects.select_for_update().select_related("season").get(pk=export.pk)
    if export.published_at is not None:
        return False
    if not export.season.has_ended:
        raise PublishError(_("season %(season)s has not ended: its dataset is published after its end")
                           % {"season": export.season.code})
    if held_by_freeze(export):
        raise PublishError(_("%(export)s holds results from after the scoreboard of %(season)s froze: publish it once "
                             "the scoreboard thaws (or an export made before the freeze), or it shows everyone what "
                             "the public board still hides") % {"export": export.name, "season": export.season.code})
    if not reason.strip():
        raise PublishError(_("publishing a dataset needs a reason (kept in the audit trail)"))
    if reasons.too_long(reason):
        raise PublishError(reasons.too_long(reason))
    export.published_at, export.published_by = timezone.now(), actor
    export.save(update_fields=["published_at", "published_by"])
    audit.record("dataset.published", export.season, actor=actor, reason=reason.strip(), after={
        "number": export.number, "sample_count": export.sample_count, "archive_sha256": export.archive_sha256})
    return True
