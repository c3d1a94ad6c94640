"""A season's questions with their answers, its announcements, and where each reader last read them."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from submissions.models import Issue, Season

QUESTION_MAX_CHARS = 2_000
ANSWER_MAX_CHARS = 10_000
ANNOUNCEMENT_MAX_CHARS = 10_000


class Clarification(models.Model):
    """A contestant's question about a season (one of its issues, or the rules) and the organizers'
    answer: to the asker alone, or to everyone (`public`), never with the asker's name."""

    season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="clarifications")
    issue = models.ForeignKey(Issue, on_delete=models.PROTECT, null=True, blank=True, related_name="clarifications")
    # Kept when the asker's account goes: an answer for everyone stays useful to the others.
    asker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                              related_name="clarifications_asked")
    question = models.TextField()
    asked_at = models.DateTimeField(default=timezone.now)
    answer = models.TextField(blank=True)
    public = models.BooleanField(default=False)
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="clarifications_answered")
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["season", "answered_at"]), models.Index(fields=["asker", "asked_at"]),
                   models.Index(fields=["answered_at", "asked_at"])]

    def __str__(self):
        return f"{self.season.code} #{self.pk}: {self.question[:60]}"

    @property
    def is_answered(self):
        return self.answered_at is not None


class Announcement(models.Model):
    """An organizer's notice to everyone in a season, shown on its pages newest first until withdrawn."""

    season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="announcements")
    text = models.TextField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                               related_name="announcements_posted")
    posted_at = models.DateTimeField(default=timezone.now)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="announcements_withdrawn")

    class Meta:
        indexes = [models.Index(fields=["season", "posted_at"])]

    def __str__(self):
        return f"{self.season.code} announcement #{self.pk}"


class ClarificationsRead(models.Model):
    """When a reader last opened a season's clarifications: answers and announcements published after it
    are unread for them."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="clarifications_read")
    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="+")
    read_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "season"], name="clarifications_read_once_per_season")]
