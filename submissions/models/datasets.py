"""Dataset exports and benchmark uploads."""
from django.conf import settings
from django.db import models

from submissions.models.accounts import Contestant
from submissions.models.seasons import Season


class DatasetExport(models.Model):
    """One export of a season's accepted samples as a dataset (submissions/dataset_export.py), kept on
    disk under DATASET_EXPORT_DIR/<season>/<number>/ and numbered 1, 2, 3... per season. The files hold
    no export number or time of their own: the same season state gives the same bytes."""

    season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="dataset_exports")
    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sample_count = models.PositiveIntegerField()
    as_of = models.DateTimeField(null=True, blank=True, help_text="The newest review or run the export reflects")
    manifest_sha256 = models.CharField(max_length=64)
    archive_sha256 = models.CharField(max_length=64)
    archive_bytes = models.PositiveBigIntegerField()
    folder = models.CharField(max_length=255, help_text="Relative to DATASET_EXPORT_DIR")
    # accepted samples whose runs did not pass: [{"sample", "why"}] left out, and the ids included by hand
    left_out = models.JSONField(default=list, blank=True)
    included = models.JSONField(default=list, blank=True)
    # published: downloadable by everyone from the season's dataset page and the public API
    published_at = models.DateTimeField(null=True, blank=True)
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")

    class Meta:
        ordering = ["season", "-number"]
        constraints = [models.UniqueConstraint(fields=["season", "number"], name="one_dataset_export_number")]

    def __str__(self):
        return f"{self.season.code} dataset v{self.number}"

    @property
    def name(self):
        return f"gpucodeforces-{self.season.code}-v{self.number}"


class BenchmarkRun(models.Model):
    """A GPU benchmarked on a dataset by `python -m profiler_agent bench DATASET --upload` (docs/dataset.md,
    "Benchmarking a GPU"): uploaded with a signed-in user's personal token, whose owner is its uploader.
    The scores are computed here again from the per-sample rows, not taken from the upload. The hardware
    page shows one series per (uploader, GPU name): an upload replaces only its uploader's own earlier one."""

    # the uploader; an account deleted later leaves its runs, shown as "unknown uploader" (nothing is lost)
    contestant = models.ForeignKey(Contestant, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="benchmark_runs")
    created_at = models.DateTimeField(auto_now_add=True)
    gpu_name = models.CharField(max_length=200, help_text="The device the agent judged on, as it named it")
    device_kind = models.CharField(max_length=16)
    dataset_name = models.CharField(max_length=200)
    season = models.ForeignKey(Season, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    dataset_export = models.ForeignKey(DatasetExport, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="benchmark_runs",
                                       help_text="The export whose manifest has this checksum, when there is one")
    dataset_version = models.PositiveIntegerField(null=True, blank=True)
    dataset_checksum = models.CharField(max_length=64, help_text="sha256 of the dataset's manifest.jsonl")
    harness_version = models.CharField(max_length=32)
    agent_version = models.CharField(max_length=32, blank=True)
    baseline = models.CharField(max_length=200, blank=True)
    sample_count = models.PositiveIntegerField()
    passed_count = models.PositiveIntegerField()
    speedup_score = models.FloatField(null=True, blank=True, help_text="Weighted geometric mean of the speedups")
    relative_time_score = models.FloatField(
        null=True, blank=True, help_text="Weighted geometric mean of this GPU's times over the baseline GPU's")
    samples = models.JSONField(default=list, help_text="Per sample: id, weight, status, flags, times, speedup")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.gpu_name} on {self.dataset_name}"

    @property
    def comparison_key(self):
        """How ?a=/?b= of the hardware comparison name this run's series: its uploader and GPU name (a run
        whose uploader is gone stands alone). Never a GPU type's slug: a slug holds no ':'."""
        uploader = self.contestant_id if self.contestant_id is not None else f"run{self.pk}"
        return f"upload:{uploader}:{self.gpu_name}"
