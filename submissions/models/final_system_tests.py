"""A season's final system test: its ranked submissions judged once more after its end, the final
standings taken from those runs alone (services/final_system_tests.py)."""
from django.conf import settings
from django.db import models

from submissions.models.runs import Rejudge
from submissions.models.seasons import Season


class FinalSystemTest(models.Model):
    """At most one per season. Its runs are those of its rejudge; the standings before it (provisional)
    and after it (final) are kept as they were shown, rank by rank, for the comparison page."""

    season = models.OneToOneField(Season, on_delete=models.CASCADE, related_name="final_system_test")
    rejudge = models.OneToOneField(Rejudge, on_delete=models.PROTECT, related_name="final_system_test")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # [{"contestant_id", "contestant", "rank", "accepted_count", "total_score", "best_speedup"}, ...] in rank order
    provisional = models.JSONField(default=list, blank=True)
    final = models.JSONField(default=list, blank=True)

    def __str__(self):
        return f"final system test of {self.season.code}"

    @property
    def is_finished(self):
        return self.finished_at is not None
