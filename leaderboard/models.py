"""The public side's own data: scoreboard freezes and what the public sees while one holds (the
season's standings, each GPU type's, and the runs and acceptances the hardware comparison, the charts
and contestants' pages are made of), as they were at the freeze."""
from django.conf import settings
from django.db import models

from submissions.models import Contestant, GpuType, Run, Season, Submission


class ScoreboardFreeze(models.Model):
    """While a season has one, visitors see the snapshot taken at `frozen_at`; organizers see the live board."""

    season = models.OneToOneField(Season, on_delete=models.CASCADE, related_name="scoreboard_freeze")
    frozen_at = models.DateTimeField(auto_now_add=True)
    frozen_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # False for a freeze taken before the GPU boards and figures were snapshotted too: those stay live
    freezes_everything = models.BooleanField(
        default=True, help_text="The per-GPU boards, hardware comparison, charts and contestants' pages are "
                                "frozen too, not the season's board alone")

    def __str__(self):
        return f"{self.season.code} frozen at {self.frozen_at:%Y-%m-%d %H:%M}"


class FrozenStanding(models.Model):
    freeze = models.ForeignKey(ScoreboardFreeze, on_delete=models.CASCADE, related_name="standings")
    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField(null=True, blank=True)
    accepted_count = models.PositiveIntegerField(default=0)
    base_score = models.FloatField(default=0)
    bonus = models.FloatField(default=0)
    total_score = models.FloatField(default=0)
    submission_count = models.PositiveIntegerField(default=0)
    first_submission_at = models.DateTimeField(null=True, blank=True)
    best_speedup = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["freeze", "rank", "contestant"], name="frozen_standing_board_order")]

    def board(self):
        """The rows this one is ranked among."""
        return FrozenStanding.objects.filter(freeze_id=self.freeze_id)


class FrozenGpuStanding(models.Model):
    """A contestant's row on one GPU type's board at the freeze (rows that passed there only, as the
    live board shows)."""

    freeze = models.ForeignKey(ScoreboardFreeze, on_delete=models.CASCADE, related_name="gpu_standings")
    gpu_type = models.ForeignKey(GpuType, on_delete=models.CASCADE, related_name="+")
    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField(null=True, blank=True)
    passed_count = models.PositiveIntegerField(default=0)
    geomean_speedup = models.FloatField(null=True, blank=True)
    best_speedup = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["freeze", "gpu_type", "rank", "contestant"], name="frozen_gpu_board_order")]

    def board(self):
        return FrozenGpuStanding.objects.filter(freeze_id=self.freeze_id, gpu_type_id=self.gpu_type_id)


class FrozenRun(models.Model):
    """A run of the season as it stood at the freeze: what it showed then of the fields a later
    verdict, second judging or clearance changes. A run made later has none."""

    freeze = models.ForeignKey(ScoreboardFreeze, on_delete=models.CASCADE, related_name="runs")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="frozen_states")
    status = models.CharField(max_length=10)
    verdict = models.CharField(max_length=20, blank=True)
    flags = models.JSONField(default=list, blank=True)
    speedup = models.FloatField(null=True, blank=True)
    candidate_median_ms = models.FloatField(null=True, blank=True)

    SHOWN = ("status", "verdict", "flags", "speedup", "candidate_median_ms")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["freeze", "run"], name="one_frozen_state_per_run")]


class FrozenAcceptance(models.Model):
    """A submission accepted at the freeze (its latest review then), and since when."""

    freeze = models.ForeignKey(ScoreboardFreeze, on_delete=models.CASCADE, related_name="acceptances")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    accepted_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["freeze", "submission"], name="one_frozen_acceptance")]
