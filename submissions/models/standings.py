"""Standings: a contestant's row on a season's board and on each GPU type's."""
from django.db import models

from submissions import board_ranks
from submissions.models.accounts import Contestant
from submissions.models.fleet import GpuType
from submissions.models.seasons import Season
from submissions.rules.ranking import UNSCORED_KEY


class Standing(board_ranks.RankedRow, models.Model):
    """A contestant's materialized row in a season, recomputed when a review or run changes it."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="standings")
    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="standings")
    accepted_count = models.PositiveIntegerField(default=0)
    base_score = models.FloatField(default=0)
    bonus = models.FloatField(default=0)
    total_score = models.FloatField(default=0)
    submission_count = models.PositiveIntegerField(default=0)
    first_submission_at = models.DateTimeField(null=True, blank=True)
    last_accepted_at = models.DateTimeField(null=True, blank=True)
    best_speedup = models.FloatField(null=True, blank=True)
    # The row's place in the season rule's order (ranking.RankingRule.board_key); its rank is read from it
    # (board_ranks), so one contestant's change writes one row.
    board_key = models.BinaryField(default=UNSCORED_KEY)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["season_id", "board_key", "contestant_id"]
        constraints = [models.UniqueConstraint(fields=["season", "contestant"], name="one_standing_per_season")]
        # The leaderboard's order within a season, ties included: a page at any depth reads the index
        # in order, with no sort of the whole season, and a rank counts the index entries before it.
        # With the id (PostgreSQL's INCLUDE; SQLite's indexes hold the rowid anyway), a deep page's ids are
        # read from the index alone.
        indexes = [models.Index(fields=["season", "board_key", "contestant"], include=["id"],
                                name="standing_board_order")]

    def __str__(self):
        return f"{self.season.code} {self.contestant}"

    def board(self):
        """The rows this one is ranked among."""
        return Standing.objects.filter(season_id=self.season_id)


class GpuStanding(board_ranks.RankedRow, models.Model):
    """A contestant's accepted samples on one GPU type: how many passed there and how fast, ranked per GPU."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="gpu_standings")
    gpu_type = models.ForeignKey(GpuType, on_delete=models.CASCADE, related_name="standings")
    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="gpu_standings")
    passed_count = models.PositiveIntegerField(default=0, help_text="Accepted samples that passed on this GPU type")
    geomean_speedup = models.FloatField(null=True, blank=True)
    best_speedup = models.FloatField(null=True, blank=True)
    board_key = models.BinaryField(default=UNSCORED_KEY)  # ranking.GpuSpeedupRule's, as Standing's
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["season", "gpu_type", "contestant"],
                                               name="one_gpu_standing_per_season")]
        indexes = [models.Index(fields=["season", "gpu_type", "board_key", "contestant"], include=["id"],
                                name="gpu_standing_board_order")]

    def __str__(self):
        return f"{self.season.code}/{self.gpu_type.slug} {self.contestant}"

    def board(self):
        return GpuStanding.objects.filter(season_id=self.season_id, gpu_type_id=self.gpu_type_id)
