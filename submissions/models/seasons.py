"""Seasons: their rules, GPU types and the board version every cached board is keyed by."""
import json
import secrets

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from submissions import harness_versions
from submissions.models.fleet import GpuType


def new_board_version() -> str:
    return secrets.token_hex(8)


class RankingRule(models.TextChoices):
    ACCEPTED_COUNT = "accepted_count", _("Accepted count, then base score, then bonus")
    CUMULATIVE_SCORE = "cumulative_score", _("Score, then more submissions, then earlier")


class SecondJudging(models.TextChoices):
    """Which passed results wait for a second judging on another host before the public sees them
    (submissions/services/confirming.py)."""
    OFF = "off", _("Off: every result is public at once")
    BOARD_CHANGES = "board_changes", _("Results that would change the public board")
    EVERY_PASSED = "every_passed", _("Every passed result")


class Admission(models.TextChoices):
    """Who may submit to a season (submissions/season_access_reads.py); its pages are public either way."""
    OPEN = "open", _("Open: every contestant may submit")
    INVITE_ONLY = "invite_only", _("Invite only: admitted accounts and holders of an invite code")


class Season(models.Model):
    code = models.CharField(max_length=16, unique=True, help_text=_("e.g. S1"))
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    ranking_rule = models.CharField(max_length=32, choices=RankingRule.choices, default=RankingRule.ACCEPTED_COUNT)
    ranking_settings = models.JSONField(
        default=dict, blank=True,
        help_text=_("Settings of the ranking rule, e.g. {\"bonus_breaks_ties\": false}; validated by the rule"))
    gpu_types = models.ManyToManyField(GpuType, related_name="seasons", blank=True)
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True)
    is_open = models.BooleanField(default=True, help_text=_("Accepts new submissions"))
    rubric = models.CharField(max_length=32, default="s1_dataset",
                              help_text=_("Scoring rubric, a name from submissions.rules.rubrics (s1_dataset, kernel_contest)"))
    rubric_config = models.JSONField(default=dict, blank=True, help_text=_("Overrides of the rubric's points; validated by the rubric"))
    code_public_after_end = models.BooleanField(
        default=True, help_text=_("Everyone's code becomes visible once the season has ended (accepted code always is)"))
    max_submissions_per_hour = models.PositiveIntegerField(null=True, blank=True, help_text=_("Empty: the site default"))
    max_submissions_per_day = models.PositiveIntegerField(null=True, blank=True, help_text=_("Empty: the site default"))
    min_harness_version = models.CharField(
        max_length=20, blank=True, validators=[harness_versions.validate],
        help_text=_("Oldest profiler agent harness version that may judge this season's runs, e.g. 1.2 "
                    "(empty: any); older agents are refused at start"))
    second_judging = models.CharField(
        max_length=16, choices=SecondJudging.choices, default=SecondJudging.BOARD_CHANGES,
        help_text=_("Which passed results an untrusted host's word alone does not make public: they wait for a "
                    "second judging on another host (at most one extra judging each)"))
    # How the season's dataset weighs its accepted samples (submissions/rules/weights.py); changed through
    # services/weighting.py, which validates and audits.
    dataset_weight_rule = models.CharField(
        max_length=32, default="uniform",
        help_text=_("Dataset weight rule, a name from submissions.rules.weights (uniform, operator, level, framework)"))
    dataset_weight_settings = models.JSONField(
        default=dict, blank=True,
        help_text=_("Settings of the weight rule, e.g. {\"weights\": {\"3\": 5}, \"default\": 1, "
                    "\"samples\": {\"ICTXSZ\": 2}}; validated by the rule"))
    # changed through services/season_access.py, which audits it (not in the admin's form)
    admission = models.CharField(max_length=16, choices=Admission.choices, default=Admission.OPEN, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    # Replaced by a fresh random token in the transaction of every change to what the season's boards
    # show (submissions/board_versions.py); the public pages' cached renderings are keyed on it.
    board_version = models.CharField(max_length=16, default=new_board_version, editable=False)
    # What each of the latest versions changed (board_versions.journal), as JSON text: a page whose rows
    # no change touched is still the page of the new version.
    board_changes = models.TextField(default="", editable=False)
    # When its final system test finished (services/final_system_tests.py): from then on its boards show
    # the final standings; before, once it has ended, provisional ones.
    final_standings_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-starts_at"]

    def __str__(self):
        return f"{self.code} {self.name}"

    def save(self, *args, **kwargs):
        # Its name and ranking rule are on its boards: any edit gives them a new version.
        self.board_version = new_board_version()
        self.board_changes = json.dumps([[self.board_version, None]])  # anything may have changed
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "board_version", "board_changes"}
        super().save(*args, **kwargs)

    def clean(self):
        from django.core.exceptions import ValidationError

        from submissions.rules.ranking import RankingSettingsError, get_rule, rule_names
        from submissions.rules.rubrics import RubricConfigError, get_rubric
        from submissions.rules.weights import WeightSettingsError, get_rule as get_weight_rule

        errors = {}
        try:
            get_rubric(self.rubric, self.rubric_config)
        except RubricConfigError as exc:
            errors["rubric_config"] = str(exc)
        if self.ranking_rule in rule_names():  # an unknown rule is the field's own error
            try:
                get_rule(self.ranking_rule, self.ranking_settings)
            except RankingSettingsError as exc:
                errors["ranking_settings"] = str(exc)
        try:
            get_weight_rule(self.dataset_weight_rule, self.dataset_weight_settings)
        except WeightSettingsError as exc:
            errors["dataset_weight_settings"] = str(exc)
        if errors:
            raise ValidationError(errors)

    @property
    def has_ended(self):
        return self.ends_at is not None and self.ends_at <= timezone.now()

    @property
    def standings_status(self):
        """"final" once its final system test has finished, "provisional" from its end until then, else
        "live"."""
        if self.final_standings_at is not None:
            return "final"
        return "provisional" if self.has_ended else "live"
