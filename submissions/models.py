"""The contest domain: seasons, contestants, issues, submissions, runs, reviews, audit, standings.

Models hold data and small derived properties only; behaviour lives in services.py.
"""
import hashlib
import secrets
import string

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from submissions import board_ranks, harness_versions
from submissions.ranking import UNSCORED_KEY


def hash_secret(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_token() -> str:
    """A random URL-safe token that never starts with '-': `--token T` would read as an option."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token


def new_board_version() -> str:
    return secrets.token_hex(8)


# Rejudges of a GPU type wait on their own queue, `gpu.<slug>.rejudge`, which agents read after the
# fresh one. The agent derives the same name (profiler_agent/worker/queue_order.py); a test keeps both equal.
REJUDGE_QUEUE_SUFFIX = ".rejudge"
# The GPU type of CPU-only agents (`gpu.cpu`, `profiler_agent work --device cpu`): it judges bundles
# that need no CUDA device only (services/hardware.py).
CPU_GPU_TYPE_SLUG = "cpu"


class GpuType(models.Model):
    """A kind of accelerator judged by its own queues (`gpu.<slug>`, then `gpu.<slug>.rejudge`), e.g.
    cpu, h100, c500."""

    # no underscore: job ids and Redis key patterns end the slug with one (queueing.job_id_prefix)
    slug = models.SlugField(max_length=32, unique=True, validators=[RegexValidator(
        r"^[-a-zA-Z0-9]+$", _("A GPU type's slug holds letters, digits and hyphens only."))])
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)

    def __str__(self):
        return self.name

    @property
    def queue_name(self):
        return f"{settings.GPU_QUEUE_PREFIX}{self.slug}"

    @property
    def rejudge_queue_name(self):
        return f"{self.queue_name}{REJUDGE_QUEUE_SUFFIX}"

    @property
    def is_cpu(self):
        """Judged by CPU-only agents: no CUDA device there."""
        return self.slug == CPU_GPU_TYPE_SLUG


class RankingRule(models.TextChoices):
    ACCEPTED_COUNT = "accepted_count", _("Accepted count, then base score, then bonus")
    CUMULATIVE_SCORE = "cumulative_score", _("Score, then more submissions, then earlier")


class SecondJudging(models.TextChoices):
    """Which passed results wait for a second judging on another host before the public sees them
    (submissions/services/confirming.py)."""
    OFF = "off", _("Off: every result is public at once")
    BOARD_CHANGES = "board_changes", _("Results that would change the public board")
    EVERY_PASSED = "every_passed", _("Every passed result")


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
                              help_text=_("Scoring rubric, a name from submissions.rubrics (s1_dataset, kernel_contest)"))
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
    # How the season's dataset weighs its accepted samples (submissions/weights.py); changed through
    # services/weighting.py, which validates and audits.
    dataset_weight_rule = models.CharField(
        max_length=32, default="uniform",
        help_text=_("Dataset weight rule, a name from submissions.weights (uniform, operator, level, framework)"))
    dataset_weight_settings = models.JSONField(
        default=dict, blank=True,
        help_text=_("Settings of the weight rule, e.g. {\"weights\": {\"3\": 5}, \"default\": 1, "
                    "\"samples\": {\"ICTXSZ\": 2}}; validated by the rule"))
    created_at = models.DateTimeField(auto_now_add=True)
    # Replaced by a fresh random token in the transaction of every change to what the season's boards
    # show (submissions/board_versions.py); the public pages' cached renderings are keyed on it.
    board_version = models.CharField(max_length=16, default=new_board_version, editable=False)

    class Meta:
        ordering = ["-starts_at"]

    def __str__(self):
        return f"{self.code} {self.name}"

    def save(self, *args, **kwargs):
        # Its name and ranking rule are on its boards: any edit gives them a new version.
        self.board_version = new_board_version()
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "board_version"}
        super().save(*args, **kwargs)

    def clean(self):
        from django.core.exceptions import ValidationError

        from submissions.ranking import RankingSettingsError, get_rule, rule_names
        from submissions.rubrics import RubricConfigError, get_rubric
        from submissions.weights import WeightSettingsError, get_rule as get_weight_rule

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
# A submission's note is a line or two about the version; the form and the API took any length.
SUBMISSION_NOTE_MAX_CHARS = 2_000


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

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return f"{self.code} {self.title}"


class SubmissionSource(models.TextChoices):
    UPLOAD = "upload", _("Upload")
    API = "api", "API"
    PULL_REQUEST = "pr", _("Pull request")


class Submission(models.Model):
    issue = models.ForeignKey(Issue, on_delete=models.PROTECT, related_name="submissions")
    contestant = models.ForeignKey(Contestant, on_delete=models.PROTECT, related_name="submissions")
    source = models.CharField(max_length=10, choices=SubmissionSource.choices, default=SubmissionSource.UPLOAD)
    pr_url = models.URLField(blank=True)
    pr_commit = models.CharField(max_length=64, blank=True)
    bundle_sha256 = models.CharField(max_length=64, db_index=True)
    note = models.TextField(blank=True)
    # Abuse detection: the reference's normalized fingerprint and the candidate's token shingles.
    reference_fingerprint = models.CharField(max_length=64, blank=True, db_index=True)
    candidate_shingles = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"#{self.pk} {self.issue.code} by {self.contestant}"


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


class Agent(models.Model):
    """A profiler agent on a GPU host; it authenticates with a token stored hashed."""

    name = models.CharField(max_length=100, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    is_active = models.BooleanField(default=True)
    # What it may judge: decided here by an organizer, never by what the agent declares.
    gpu_types = models.ManyToManyField(GpuType, blank=True, related_name="agents",
                                       help_text="GPU types whose runs this agent may start")
    queues = models.JSONField(default=list, blank=True, help_text="Queues the agent declares (informative only)")
    inventory = models.JSONField(default=dict, blank=True)
    versions = models.JSONField(default=dict, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # SHA-256 of its Redis ACL user's password (never the password): to make the user again after a
    # Redis restart lost it (services/agent_redis.restore_missing)
    redis_password_sha256 = models.CharField(max_length=64, blank=True)
    # jobs its host took from a queue and never started (services/recovery); reset when resumed
    dropped_jobs = models.PositiveIntegerField(default=0)
    quarantine_reason = models.TextField(blank=True, help_text="Set when its host kept taking jobs it never "
                                         "started: its Redis user is off and its workers drained until resumed")
    # The organizer's word that this host's results need no second judging (services/confirming.py).
    trusted = models.BooleanField(
        default=False, help_text=_("Its passed results are public at once and confirm other hosts' results"))

    def __str__(self):
        return self.name


class AgentWorker(models.Model):
    """One `profiler_agent work` process of an agent host, pinned to one GPU (or a CPU worker).

    Created by its first heartbeat or start; the host's credential stays the Agent's. What it reports
    (GPU, versions, current run) is what the host says; `draining` is the organizer's word."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="workers")
    name = models.CharField(max_length=100, help_text="The worker's name, unique per agent, e.g. host-gpu0")
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True)
    gpu_uuid = models.CharField(max_length=100, blank=True)
    gpu_model = models.CharField(max_length=200, blank=True)
    driver = models.CharField(max_length=100, blank=True)
    memory_bytes = models.BigIntegerField(null=True, blank=True)
    harness_version = models.CharField(max_length=20, blank=True)
    current_run = models.ForeignKey("Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                    help_text="The run it said it was judging at its last heartbeat (or started last)")
    draining = models.BooleanField(default=False, help_text="Finishes its current run and takes no more")
    drain_reason = models.TextField(blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["agent__name", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="one_worker_name_per_agent")]

    def __str__(self):
        return f"{self.agent.name}/{self.name}"


class RejudgeScope(models.TextChoices):
    SUBMISSION = "submission", _("Submission")
    ISSUE = "issue", _("Issue")
    SEASON = "season", _("Season")


class Rejudge(models.Model):
    """An organizer's request to judge again; its runs are new ones, the old ones stay."""

    scope = models.CharField(max_length=12, choices=RejudgeScope.choices)
    target = models.CharField(max_length=50, help_text="Submission id, issue code or season code")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"rejudge {self.scope} {self.target}"


class RunStatus(models.TextChoices):
    # Over the contestant's cap of queued runs: kept in the database until a slot frees
    # (services/scheduling.py); not in Redis yet.
    WAITING = "waiting", _("Waiting")
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")


class Verdict(models.TextChoices):
    PASSED = "passed", _("Passed")
    WRONG_ANSWER = "wrong_answer", _("Wrong answer")
    COMPILE_ERROR = "compile_error", _("Compile error")
    RUNTIME_ERROR = "runtime_error", _("Runtime error")
    TIMEOUT = "timeout", _("Timeout")
    MEMORY_LIMIT = "memory_limit", _("Memory limit")
    INTERNAL_ERROR = "internal_error", _("Internal error")
    # Set by an organizer on a run no agent had started (services/cancelling.py), never by an agent.
    CANCELLED = "cancelled", _("Cancelled")


class RunStage(models.TextChoices):
    """What a running run is doing, as its agent reports it (profiler_agent.protocol.result_schema.JUDGING_STAGES)."""
    COMPILING = "compiling", _("Compiling")
    CHECKING = "checking", _("Checking correctness")
    TIMING = "timing", _("Timing")
    PROFILING = "profiling", _("Profiling")
    SELF_TEST = "self_test", _("Running the self-test")


class Run(models.Model):
    """One judging of a submission on one GPU type. Rejudging creates new runs."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="runs")
    gpu_type = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    verdict = models.CharField(max_length=20, choices=Verdict.choices, blank=True)
    job_secret_hash = models.CharField(max_length=64)
    rq_job_id = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times handed to the queue")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    # The worker (one GPU of the agent's host) that started the current attempt, and that GPU's UUID.
    worker = models.ForeignKey(AgentWorker, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    gpu_uuid = models.CharField(max_length=100, blank=True)
    # The harness version the worker declared when it started the current attempt (blank: not declared).
    harness_version = models.CharField(max_length=20, blank=True)
    worker_refusals = models.PositiveSmallIntegerField(
        default=0, help_text="Attempts handed back because the worker could not take them (draining, outdated)")
    rejudge = models.ForeignKey(Rejudge, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    # A second judging, on another host, of a passed run that awaits it (services/confirming.py).
    confirms = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="confirmations")
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # The last heartbeat in which the judging agent said it was still judging this attempt.
    alive_at = models.DateTimeField(null=True, blank=True)
    # The current attempt's stage, from its agent's progress reports: blank until the first one.
    stage = models.CharField(max_length=12, choices=RunStage.choices, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Key metrics copied out of the result so lists and rankings need no JSON parsing.
    reference_median_ms = models.FloatField(null=True, blank=True)
    candidate_median_ms = models.FloatField(null=True, blank=True)
    speedup = models.FloatField(null=True, blank=True)
    tflops = models.FloatField(null=True, blank=True)
    bandwidth_gbs = models.FloatField(null=True, blank=True)
    device_name = models.CharField(max_length=200, blank=True)
    flags = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True)
    # Earlier attempts an agent started and the site handed back ([{"attempt", "agent_id", "secret_hash",
    # "handed_back_at"}]): their reports, arriving late, are told apart from forged ones (judging.LateReport)
    handed_back = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"run {self.pk} of submission {self.submission_id} on {self.gpu_type.slug}"

    @property
    def is_finished(self):
        return self.status == RunStatus.DONE

    @property
    def behind_fresh_runs(self):
        """A rejudge's run or a second judging: queued behind every fresh run, never capped (scheduling)."""
        return self.rejudge_id is not None or self.confirms_id is not None

    @property
    def queue_name(self):
        """The Redis queue of the run's job: a rejudge's runs (and second judgings) go behind the fresh ones."""
        return self.gpu_type.rejudge_queue_name if self.behind_fresh_runs else self.gpu_type.queue_name

    @property
    def provisional(self):
        """A figure awaiting a second judging, or contradicted by one: its owner's and organizers' only."""
        from submissions.timing_flags import is_provisional

        return is_provisional(self)

    @property
    def spent_attempts(self):
        """Attempts that could have judged it: those a worker handed back unjudged do not count."""
        return self.attempts - self.worker_refusals


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


class AuditTrailIsAppendOnly(Exception):
    pass


class AuditEntry(models.Model):
    """An append-only record of a change: who, when, before, after, why."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=100, help_text="Who acted, kept even if the user goes")
    action = models.CharField(max_length=50)
    object_type = models.CharField(max_length=50)
    object_id = models.CharField(max_length=50)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "audit entries"

    def __str__(self):
        return f"{self.action} {self.object_type}:{self.object_id} by {self.actor_label}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise AuditTrailIsAppendOnly("audit entries are never changed; record a new one")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditTrailIsAppendOnly("audit entries are never deleted")


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


class DatasetExport(models.Model):
    """One export of a season's accepted samples as a dataset (submissions/dataset_export.py), kept on
    disk under DATASET_EXPORT_DIR/<season>/<number>/ and numbered 1, 2, 3... per season. The files hold
    no export number or time of their own: the same season state gives the same bytes."""

    season = models.ForeignKey(Season, on_delete=models.PROTECT, related_name="dataset_exports")
    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sample_count = models.PositiveIntegerField()
    as_of = models.DateTimeField(null=True, blank=True, help_text="The newest review or run the export reflects")
    manifest_sha256 = models.CharField(max_length=64)
    archive_sha256 = models.CharField(max_length=64)
    archive_bytes = models.PositiveBigIntegerField()
    folder = models.CharField(max_length=255, help_text="Relative to DATASET_EXPORT_DIR")

    class Meta:
        ordering = ["season", "-number"]
        constraints = [models.UniqueConstraint(fields=["season", "number"], name="one_dataset_export_number")]

    def __str__(self):
        return f"{self.season.code} dataset v{self.number}"

    @property
    def name(self):
        return f"gpucodeforces-{self.season.code}-v{self.number}"


class BenchmarkRun(models.Model):
    """A GPU benchmarked on a dataset by `python -m profiler_agent bench DATASET --upload` (docs/dataset.md,
    "Benchmarking a GPU"): uploaded with a signed-in user's personal token, whose owner is its uploader.
    The scores are computed here again from the per-sample rows, not taken from the upload. The hardware
    page shows one series per (uploader, GPU name): an upload replaces only its uploader's own earlier one."""

    # the uploader; an account deleted later leaves its runs, shown as "unknown uploader" (nothing is lost)
    contestant = models.ForeignKey(Contestant, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="benchmark_runs")
    created_at = models.DateTimeField(auto_now_add=True)
    gpu_name = models.CharField(max_length=200, help_text="The device the agent judged on, as it named it")
    device_kind = models.CharField(max_length=16)
    dataset_name = models.CharField(max_length=200)
    season = models.ForeignKey(Season, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    dataset_export = models.ForeignKey(DatasetExport, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="benchmark_runs",
                                       help_text="The export whose manifest has this checksum, when there is one")
    dataset_version = models.PositiveIntegerField(null=True, blank=True)
    dataset_checksum = models.CharField(max_length=64, help_text="sha256 of the dataset's manifest.jsonl")
    harness_version = models.CharField(max_length=32)
    agent_version = models.CharField(max_length=32, blank=True)
    baseline = models.CharField(max_length=200, blank=True)
    sample_count = models.PositiveIntegerField()
    passed_count = models.PositiveIntegerField()
    speedup_score = models.FloatField(null=True, blank=True, help_text="Weighted geometric mean of the speedups")
    relative_time_score = models.FloatField(
        null=True, blank=True, help_text="Weighted geometric mean of this GPU's times over the baseline GPU's")
    samples = models.JSONField(default=list, help_text="Per sample: id, weight, status, flags, times, speedup")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.gpu_name} on {self.dataset_name}"

    @property
    def comparison_key(self):
        """How ?a=/?b= of the hardware comparison name this run's series: its uploader and GPU name (a run
        whose uploader is gone stands alone). Never a GPU type's slug: a slug holds no ':'."""
        uploader = self.contestant_id if self.contestant_id is not None else f"run{self.pk}"
        return f"upload:{uploader}:{self.gpu_name}"
