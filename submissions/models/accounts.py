"""Contestants, their API tokens, and failed sign-ins."""
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


def hash_secret(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_token() -> str:
    """A random URL-safe token that never starts with '-': `--token T` would read as an option."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token


class Contestant(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="contestant")
    display_name = models.CharField(max_length=100)
    affiliation = models.CharField(max_length=200, blank=True)
    gitee_handle = models.CharField(max_length=100, blank=True)
    gitlink_handle = models.CharField(max_length=100, blank=True)
    github_handle = models.CharField(max_length=100, blank=True)
    agreement_version = models.CharField(max_length=32, blank=True, help_text="Version of the contest agreement accepted")
    agreement_accepted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.display_name

    @property
    def is_organizer(self):
        return self.user.is_staff


class ApiToken(models.Model):
    """A contestant's personal API token; only its hash is stored."""

    contestant = models.ForeignKey(Contestant, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, default="default")
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8, help_text="First characters, to recognize a token")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.contestant} {self.name} ({self.prefix}…)"


class LoginFailure(models.Model):
    """A failed sign-in (services/login_throttle.py): counted per account name and per client address
    to refuse guessing; rows older than a day are pruned as new ones arrive."""

    account = models.CharField(max_length=150, help_text="The user name as typed, case-folded")
    address = models.CharField(max_length=45, blank=True, help_text="The client's IP address")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["account", "created_at"]), models.Index(fields=["address", "created_at"])]

    def __str__(self):
        return f"{self.account} from {self.address or '?'} at {self.created_at:%Y-%m-%d %H:%M:%S}"
