"""Issues: the operators contestants open to optimize."""
import secrets
import string

from django.db import models
from django.utils.translation import gettext_lazy as _

from submissions.models.accounts import Contestant
from submissions.models.seasons import Season


ISSUE_CODE_ALPHABET = string.ascii_uppercase


def new_issue_code() -> str:
    return "".join(secrets.choice(ISSUE_CODE_ALPHABET) for _ in range(6))


class Framework(models.TextChoices):
    PYTORCH = "pytorch", "PyTorch"
    PADDLE = "paddle", "PaddlePaddle"
    TENSORFLOW = "tensorflow", "TensorFlow"
    JAX = "jax", "JAX"
    MMCV = "mmcv", "MMCV"
    TRANSFORMERS = "transformers", "Transformers"
    OTHER = "other", _("Other")


# An issue's description is a few paragraphs; the column has no limit of its own (the walk of issue 12
# opened one of 3 MB through the API, shown whole to every visitor of the issue).
ISSUE_DESCRIPTION_MAX_CHARS = 20_000


class Issue(models.Model):
    """A 赛题: one operator a contestant optimizes; submissions are bound to it by its code."""

    season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="issues")
    code = models.CharField(max_length=6, unique=True)
    title = models.CharField(max_length=200)
    operator = models.CharField(max_length=200, blank=True)
    framework = models.CharField(max_length=20, choices=Framework.choices, default=Framework.PYTORCH)
    level = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Claimed level 1-4 (seed 000)")
    description = models.TextField(blank=True)
    author = models.ForeignKey(Contestant, on_delete=models.PROTECT, related_name="issues")
    created_at = models.DateTimeField(auto_now_add=True)
    # an organizer's torchcode.py (services/fixed_references.py): when set, every submission to the issue
    # is judged on it, whatever reference it carries, and may send cudacode.py alone
    fixed_reference = models.TextField(blank=True, default="")
    fixed_reference_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return f"{self.code} {self.title}"
