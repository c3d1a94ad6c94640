"""The fleet: one AgentWorker per `profiler_agent work` process (one GPU each), their heartbeats,
starting a run on a worker, and draining or resuming a worker (audited).

A worker that may not take runs now (draining, or older than the run's season's minimum harness
version) is refused at start, and the run goes back to the FRONT of its queue as a new attempt, so
nothing is lost and it keeps its place. Such hand-backs are counted apart (`Run.worker_refusals`) and
do not use up the run's attempts.
"""
import re

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from submissions import harness_versions
from submissions.models import AgentWorker, Run, RunStatus, Season
from submissions.services import audit, judging, reasons, run_states

WORKER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$")


class BadWorkerReport(ValueError):
    """What an agent said about its worker cannot be stored (e.g. an unusable name)."""


class WorkerRefused(judging.AgentRefused):
    """This worker may not take runs now; the run went back to the front of its queue."""

    def __init__(self, message, *, why, pause_s=None):
        super().__init__(message)
        self.why = why
        self.pause_s = pause_s  # None: until the heartbeat says otherwise (drain)

    def answer(self):
        """What the agent is told: stop dequeuing, and for how long."""
        return {"detail": str(self), "accept_jobs": False, "why": self.why, "retry_after_s": self.pause_s}


def _clip(value, length):
    return str(value or "")[:length]


def worker_named(agent, name):
    """The agent's worker of that name, made on first sight (a worker may start a run before its
    first heartbeat got through)."""
    # fullmatch: with match, "$" let a name ending in a newline by (the API's pattern refuses it too)
    if not isinstance(name, str) or not WORKER_NAME.fullmatch(name):
        raise BadWorkerReport(f"worker name {str(name)[:120]!r} is not usable: 1-100 letters, digits, '.', '_', "
                              "'-', '@', ':', starting with a letter or digit")
    worker, _ = AgentWorker.objects.get_or_create(agent=agent, name=name)
    return worker


def _describe_gpu(worker, gpu):
    gpu = gpu or {}
    index = gpu.get("index")
    worker.gpu_index = index if isinstance(index, int) and 0 <= index < 32768 else None
    worker.gpu_uuid = _clip(gpu.get("uuid"), 100)
    worker.gpu_model = _clip(gpu.get("model"), 200)
    worker.driver = _clip(gpu.get("driver"), 100)
    memory = gpu.get("memory_bytes")
    worker.memory_bytes = memory if isinstance(memory, int) and 0 <= memory < 2**62 else None


def _reported_run(worker, run_id):
    """The run the worker says it judges, if that is true on the site (running, bound to it)."""
    if not isinstance(run_id, int):
        return None
    return Run.objects.filter(pk=run_id, worker=worker, status=RunStatus.RUNNING).first()


@transaction.atomic
def record_heartbeat(agent, report):
    """Store one worker's heartbeat: its GPU, harness version and current run. O(1) in the backlog."""
    worker = worker_named(agent, report.get("name"))
    _describe_gpu(worker, report.get("gpu"))
    worker.harness_version = _clip(report.get("harness_version"), 20)
    worker.current_run = _reported_run(worker, report.get("current_run"))
    worker.last_heartbeat_at = timezone.now()
    worker.save(update_fields=["gpu_index", "gpu_uuid", "gpu_model", "driver", "memory_bytes", "harness_version",
                               "current_run", "last_heartbeat_at"])
    return worker


def seasons_requiring_more(agent, version):
    """Seasons of the GPU types this agent serves whose minimum harness version `version` fails."""
    seasons = (Season.objects.exclude(min_harness_version="").filter(gpu_types__agents=agent).distinct()
               .order_by("code").values_list("code", "min_harness_version"))
    return [{"season": code, "min_harness_version": minimum} for code, minimum in seasons
            if harness_versions.is_below(version, minimum)]


def heartbeat_answer(worker):
    """Whether the worker should take jobs now, why not, and the seasons it is too old for (it still
    takes jobs then: the runs of other seasons are its to judge; those seasons' runs are refused)."""
    outdated = seasons_requiring_more(worker.agent, worker.harness_version)
    answer = {"accept_jobs": not worker.draining, "why": "", "outdated": bool(outdated), "outdated_for": outdated}
    if worker.draining:
        answer["why"] = f"draining: {worker.drain_reason}" if worker.drain_reason else "draining"
    return answer


def _refusal(worker, run, version):
    if worker is not None and worker.draining:
        return WorkerRefused(f"worker {worker.name} is draining; run {run.pk} went back to the front of its queue",
                             why=f"draining: {worker.drain_reason}" if worker.drain_reason else "draining")
    minimum = run.submission.issue.season.min_harness_version
    if harness_versions.is_below(version, minimum):
        season = run.submission.issue.season.code
        return WorkerRefused(
            f"harness version {version or '(none reported)'} is older than season {season}'s minimum {minimum}; "
            f"run {run.pk} went back to the front of its queue (upgrade the agent)",
            why=f"outdated for season {season} (needs harness {minimum})",
            pause_s=settings.FLEET_REFUSAL_PAUSE_SECONDS)
    return None


def start_on_worker(run_id, agent, attempt, *, worker_name, gpu_uuid="", harness_version=None, require_claim=False):
    """judging.start_run for a named worker: the run records the worker and its GPU's UUID. Raises what
    start_run raises, RunConflict when a sibling worker of the same host holds the run, and
    WorkerRefused (after handing the run back, committed) when this worker may not take it."""
    with transaction.atomic():
        run = judging.lock_run(run_id)
        judging.check_startable(run, agent, attempt, require_claim=require_claim)
        worker = worker_named(agent, worker_name)
        if harness_version is not None:
            worker.harness_version = _clip(harness_version, 20)
        if run.status == RunStatus.RUNNING and run.worker_id not in (None, worker.pk):
            raise judging.RunConflict(f"run {run.pk} is already being judged by another worker of agent {agent.name}")
        refusal = _refusal(worker, run, worker.harness_version)
        if refusal is None:
            run, secret = run_states.start(run, agent, worker=worker, gpu_uuid=_clip(gpu_uuid, 100),
                                           harness_version=worker.harness_version)
            worker.current_run = run
            worker.save(update_fields=["harness_version", "current_run"])
            return run, secret
        worker.save(update_fields=["harness_version"])
        run_states.hand_back_unspent(run, actor_label=f"agent:{agent.name}", reason=f"worker {worker.name}: {refusal.why}")
    raise refusal


class DrainRefused(ValueError):
    """The worker cannot be drained as asked (its reason is too long); the message says why."""


def drain_worker(worker, *, actor=None, actor_label="", reason=""):
    """The worker finishes its current run and takes no more until resumed. False when it already drains."""
    if reasons.too_long(reason):
        raise DrainRefused(reasons.too_long(reason))
    return _drain(worker, actor=actor, actor_label=actor_label, reason=reason)


@transaction.atomic
def _drain(worker, *, actor=None, actor_label="", reason=""):
    worker = AgentWorker.objects.select_for_update().get(pk=worker.pk)
    if worker.draining:
        return False
    worker.draining, worker.drain_reason = True, reason
    worker.save(update_fields=["draining", "drain_reason"])
    audit.record("worker.drained", worker, actor=actor, actor_label=actor_label, before={"draining": False},
                 after={"draining": True}, reason=reason)
    return True


@transaction.atomic
def resume_worker(worker, *, actor=None, actor_label="", reason=""):
    """The worker takes runs again (from its next heartbeat). False when it was not draining."""
    worker = AgentWorker.objects.select_for_update().get(pk=worker.pk)
    if not worker.draining:
        return False
    worker.draining, worker.drain_reason = False, ""
    worker.save(update_fields=["draining", "drain_reason"])
    audit.record("worker.resumed", worker, actor=actor, actor_label=actor_label, before={"draining": True},
                 after={"draining": False}, reason=reason)
    _lift_quarantine(worker.agent, actor=actor, actor_label=actor_label, reason=reason)
    return True


def quarantine_agent(agent, reason, *, actor_label="sweeper"):
    """Its host kept taking jobs it never started: its Redis user is switched off (it can take no more)
    and its workers drained, until an organizer resumes one of them. False when already quarantined."""
    from submissions.models import Agent

    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    if agent.quarantine_reason:
        return False
    agent.quarantine_reason = reason
    agent.save(update_fields=["quarantine_reason"])
    audit.record("agent.quarantined", agent, actor_label=actor_label, after={"quarantine_reason": reason}, reason=reason)
    for worker in agent.workers.filter(draining=False):
        _drain(worker, actor_label=actor_label, reason=reason)  # the sweeper's own reason, not an organizer's
    return True  # its Redis user is switched off on commit (agent_redis.connect: the row's save)


def _lift_quarantine(agent, *, actor=None, actor_label="", reason=""):
    from submissions.models import Agent

    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    if not agent.quarantine_reason and not agent.dropped_jobs:
        return
    before = {"quarantine_reason": agent.quarantine_reason, "dropped_jobs": agent.dropped_jobs}
    agent.quarantine_reason, agent.dropped_jobs = "", 0
    agent.save(update_fields=["quarantine_reason", "dropped_jobs"])
    audit.record("agent.quarantine_lifted", agent, actor=actor, actor_label=actor_label, before=before,
                 after={"quarantine_reason": "", "dropped_jobs": 0}, reason=reason)


def find_worker(name, agent_name=None):
    """The worker called `name` (of `agent_name` when given); LookupError naming the choices otherwise."""
    found = AgentWorker.objects.select_related("agent").filter(name=name)
    if agent_name:
        found = found.filter(agent__name=agent_name)
    workers = list(found[:10])
    if not workers:
        raise LookupError(f"no worker named {name}" + (f" on agent {agent_name}" if agent_name else ""))
    if len(workers) > 1:
        raise LookupError(f"several agents have a worker named {name} ({', '.join(w.agent.name for w in workers)}): "
                          "say which with --agent")
    return workers[0]
