"""Who may submit to a season: the accounts admitted to an invite-only season, its invite codes, and
the contestants banned from it (Season.admission says whether the season is invite-only).

Nothing here is deleted: a revoked admission or invite code and a lifted ban keep who did it, when
and why, beside the audit trail (services/season_access.py writes both)."""
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from submissions.models.accounts import Contestant
from submissions.models.seasons import Season

# No 0/O or 1/I: codes are read aloud, printed and typed by hand.
INVITE_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
INVITE_CODE_LENGTH = 10


def new_invite_code() -> str:
    return "".join(secrets.choice(INVITE_CODE_ALPHABET) for _ in range(INVITE_CODE_LENGTH))


def normalized_invite_code(text: str) -> str:
    """A code as typed (any case, with spaces or dashes) as stored."""
    return "".join(ch for ch in (text or "").upper() if ch not in " -\t\r\n")


class InviteCode(models.Model):
    """A code that admits whoever enters it to its season, up to `max_uses` accounts, until `expires_at`."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="invite_codes")
    code = models.CharField(max_length=32, unique=True)
    max_uses = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: any number of accounts")
    use_count = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why it was made, e.g. who it is for")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    revoke_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["season", "-created_at", "-pk"]

    def __str__(self):
        return f"{self.season.code} invite {self.code}"

    @property
    def is_revoked(self):
        return self.revoked_at is not None

    @property
    def has_expired(self):
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_used_up(self):
        return self.max_uses is not None and self.use_count >= self.max_uses

    @property
    def is_usable(self):
        return not (self.is_revoked or self.has_expired or self.is_used_up)


class SeasonAdmission(models.Model):
    """An account admitted to a season: by an organizer, or by entering an invite code (`invite`)."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="admissions")
    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="season_admissions")
    invite = models.ForeignKey(InviteCode, null=True, blank=True, on_delete=models.PROTECT, related_name="admissions")
    admitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    revoke_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["season", "-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["season", "contestant"], condition=Q(revoked_at__isnull=True),
                                               name="one_admission_per_season")]

    def __str__(self):
        return f"{self.season.code} admits {self.contestant}"


class SeasonBan(models.Model):
    """A contestant banned from a season: their submissions to it are refused and their standing is on
    no public board until the ban is lifted."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="bans")
    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="season_bans")
    reason = models.TextField()
    banned_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    lift_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["season", "-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["season", "contestant"], condition=Q(lifted_at__isnull=True),
                                               name="one_active_ban_per_season")]

    def __str__(self):
        return f"{self.season.code} bans {self.contestant}"

    @property
    def is_active(self):
        return self.lifted_at is None
