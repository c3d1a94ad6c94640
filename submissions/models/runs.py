"""Runs (one judging of a submission on a GPU type) and rejudges."""
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from submissions.models.fleet import Agent, AgentWorker, GpuType
from submissions.models.submissions import Submission


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
    # Set by an organizer, or the run's contestant, on a run no agent had started (services/cancelling.py),
    # never by an agent.
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
    # A final system test's run, or its second judging: judged before every other run (its own queue).
    final_test = models.BooleanField(default=False, help_text="A final system test's run (or its second "
                                     "judging): queued on the GPU type's final queue, read before every other")
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
    def fresh(self):
        """A run of a contestant's submission as it came in: capped per contestant and theirs to cancel
        (scheduling). A rejudge's run, a second judging or a final system test's is not."""
        return self.rejudge_id is None and self.confirms_id is None

    @property
    def queue_name(self):
        """The Redis queue of the run's job (scheduling): a final system test's runs (and their second
        judgings) before every other, a rejudge's runs (and second judgings) behind the fresh ones."""
        if self.final_test:
            return self.gpu_type.final_queue_name
        return self.gpu_type.queue_name if self.fresh else self.gpu_type.rejudge_queue_name

    @property
    def provisional(self):
        """A figure awaiting a second judging, or contradicted by one: its owner's and organizers' only."""
        from submissions.rules.timing_flags import is_provisional

        return is_provisional(self)

    @property
    def spent_attempts(self):
        """Attempts that could have judged it: those a worker handed back unjudged do not count."""
        return self.attempts - self.worker_refusals
