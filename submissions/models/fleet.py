"""Accelerator types, GPU hosts (agents) and their workers."""
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _


# Rejudges of a GPU type wait on their own queue, `gpu.<slug>.rejudge`, which agents read after the
# fresh one; a final system test's runs on `gpu.<slug>.final`, which agents read before every other.
# The agent derives the same names (profiler_agent/worker/queue_order.py); a test keeps both equal.
REJUDGE_QUEUE_SUFFIX = ".rejudge"
FINAL_QUEUE_SUFFIX = ".final"


# The GPU type of CPU-only agents (`gpu.cpu`, `profiler_agent work --device cpu`): it judges bundles
# that need no CUDA device only (services/hardware.py).
CPU_GPU_TYPE_SLUG = "cpu"


class GpuType(models.Model):
    """A kind of accelerator judged by its own queues (`gpu.<slug>.final`, then `gpu.<slug>`, then
    `gpu.<slug>.rejudge`), e.g. cpu, h100, c500."""

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
    def final_queue_name(self):
        return f"{self.queue_name}{FINAL_QUEUE_SUFFIX}"

    @property
    def is_cpu(self):
        """Judged by CPU-only agents: no CUDA device there."""
        return self.slug == CPU_GPU_TYPE_SLUG


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
