"""Submissions, their files, reviews and abuse flags."""
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _, pgettext_lazy

from submissions.models.accounts import Contestant
from submissions.models.issues import Issue


# A submission's note is a line or two about the version; the form and the API took any length.
SUBMISSION_NOTE_MAX_CHARS = 2_000


class SubmissionSource(models.TextChoices):
    UPLOAD = "upload", _("Upload")
    API = "api", "API"
    PULL_REQUEST = "pr", _("Pull request")


class SubmissionMode(models.TextChoices):
    """What a submission is for. Only a ranked one may rank, be reviewed, count in standings or become a
    dataset sample; test, benchmark and profile submissions are their owner's (and the organizers') alone."""
    RANKED = "ranked", _("Ranked")
    TEST = "test", _("Test")  # correctness trials only: no timing, no confirmation, no self-test
    BENCHMARK = "benchmark", _("Benchmark")  # the full judging, never ranked or public
    # the correctness trials, then both models' kernels under the GPU's profiler: a report per kernel
    # (services/profiles.py), never ranked or public
    PROFILE = "profile", pgettext_lazy("submission mode", "Profile")  # not an account's profile


class Submission(models.Model):
    issue = models.ForeignKey(Issue, on_delete=models.PROTECT, related_name="submissions")
    contestant = models.ForeignKey(Contestant, on_delete=models.PROTECT, related_name="submissions")
    source = models.CharField(max_length=10, choices=SubmissionSource.choices, default=SubmissionSource.UPLOAD)
    mode = models.CharField(max_length=10, choices=SubmissionMode.choices, default=SubmissionMode.RANKED, db_index=True)
    pr_url = models.URLField(blank=True)
    pr_commit = models.CharField(max_length=64, blank=True)
    bundle_sha256 = models.CharField(max_length=64, db_index=True)
    kernel_digest = models.CharField(max_length=64, blank=True, db_index=True,
                                     help_text="What makes the kernel, normalized (submissions/kernel_identity.py)")
    note = models.TextField(blank=True)
    # A profile submission asked for from a passed run ("profile this run"): that run, whose bundle and GPU
    # type it takes (services/profiles.py). Null for every other submission.
    profile_of = models.ForeignKey("submissions.Run", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="profiles")
    # Abuse detection: the reference's normalized fingerprint and the candidate's token shingles.
    reference_fingerprint = models.CharField(max_length=64, blank=True, db_index=True)
    candidate_shingles = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"#{self.pk} {self.issue.code} by {self.contestant}"

    @property
    def is_ranked(self) -> bool:
        return self.mode == SubmissionMode.RANKED


class SubmissionFile(models.Model):
    """One file of a bundle, stored in the database so nothing depends on a local disk."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=255)
    content = models.TextField()
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["submission", "path"], name="unique_file_per_submission")]

    def __str__(self):
        return self.path


class ReviewDecision(models.TextChoices):
    ACCEPTED = "accepted", _("Accepted")
    REJECTED = "rejected", _("Rejected")


class Review(models.Model):
    """An organizer's decision on a submission, with the rubric points awarded."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    decision = models.CharField(max_length=10, choices=ReviewDecision.choices)
    reason = models.TextField(blank=True)
    rubric = models.JSONField(default=dict, blank=True, help_text="Points per rubric item")
    rubric_prefill = models.JSONField(default=dict, blank=True, help_text="Points the runs suggested")
    override_reason = models.TextField(blank=True, help_text="Why points differ from the prefill")
    acceptance_override = models.TextField(
        blank=True, help_text="Why it was accepted without a passed run on every GPU type of its season, or with "
                              "abuse flags (services/reviewing.acceptance_blockers)")
    base_score = models.FloatField(default=0)
    bonus = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.decision} #{self.submission_id}"


class FlagKind(models.TextChoices):
    SAME_OPERATOR = "same_operator", _("Same operator submitted again")
    NEAR_COPY = "near_copy", _("Near-copy of another contestant's CUDA code")
    NO_IMPROVEMENT = "no_improvement", _("Similar optimization without a better speedup")


class SubmissionFlag(models.Model):
    """Something an organizer must look at before accepting; links the other submission involved."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="abuse_flags")
    kind = models.CharField(max_length=20, choices=FlagKind.choices)
    detail = models.TextField()
    other_submission = models.ForeignKey(Submission, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    similarity = models.FloatField(null=True, blank=True, help_text="0-100 %, where measured")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "-similarity", "pk"]
        constraints = [models.UniqueConstraint(fields=["submission", "kind", "other_submission"], name="one_flag_per_pair")]

    def __str__(self):
        return f"{self.kind} on #{self.submission_id}"
