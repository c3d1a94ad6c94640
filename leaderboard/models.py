"""The public side's own data: scoreboard freezes and the standings the public sees while one holds."""
from django.conf import settings
from django.db import models

from submissions.models import Contestant, Season


class ScoreboardFreeze(models.Model):
    """While a season has one, visitors see the snapshot taken at `frozen_at`; organizers see the live board."""

    season = models.OneToOneField(Season, on_delete=models.CASCADE, related_name="scoreboard_freeze")
    frozen_at = models.DateTimeField(auto_now_add=True)
    frozen_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

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
