"""The run's state machine: every change of a run's status is made here, and nowhere else.

    new ──admit──▶ queued ──start──▶ running ──finish──▶ done (the agent's verdict)
     │               ▲  │               │ │
     └──▶ waiting ───┘  │               │ └──requeue──▶ queued (a new attempt; attempts spent: give_up)
            ▲           ├──cancel──▶ done (cancelled) ◀──cancel (an organizer's: its agent is told to stop)
            │           │                                       (give_up: done, internal_error)
            └───────────┘ wait_for_another_host (a second judging with no other host online)

- `queue` starts a new attempt and hands its job to Redis once committed (`queueing`); `requeue`,
  `hand_back_unspent` and `release` are the ways back to it.
- Leaving `queued` (started, finished, cancelled, given up) frees the contestant's queue slot, which
  goes to their oldest waiting run on that GPU type (`scheduling` holds the policy: the cap, the order).
- Callers hold the run's row lock (select_for_update) and call these in their transaction; checking
  who may make a change (judging's access checks, the organizer's permissions) is theirs.

Lock order, to stay free of deadlocks: a run's row, then its contestant's row, then waiting runs.
"""
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from submissions import queueing
from submissions.models import Contestant, Run, RunStatus, Verdict, hash_secret, new_token
from submissions.services import audit, scheduling

log = logging.getLogger(__name__)


def admit(run, contestant_id):
    """A new run goes to its queue, or waits in the database when its contestant has `scheduling.cap`
    runs queued (or older ones waiting: they go first). The caller holds the contestant's row lock, or
    creates a rejudge's runs (a final system test's among them), which are never capped (scheduling)."""
    if scheduling.must_wait(run, contestant_id):
        run.status = RunStatus.WAITING
        run.save(update_fields=["status"])
        return
    queue(run)


def queue(run, *, at_front=False):
    """Start a new attempt and hand its job to Redis once committed. The job names the run and the
    attempt only: every agent host can read and write that Redis, so the secret of the attempt, the
    URLs and the judging options come from `judging.start_run`, to the agent the site chose.
    `at_front`: the job goes first in its queue (a run a worker handed back keeps its place)."""
    if run.agent_id and run.job_secret_hash:  # a started attempt handed back: its late report is told apart
        run.handed_back = [*(run.handed_back or []), {"attempt": run.attempts, "agent_id": run.agent_id,
                                                      "secret_hash": run.job_secret_hash,
                                                      "handed_back_at": timezone.now().isoformat()}][-16:]
    run.attempts += 1
    run.job_secret_hash = ""  # no secret until an agent starts this attempt
    run.rq_job_id = queueing.job_id(run.pk, run.attempts, run.gpu_type.slug)
    run.status = RunStatus.QUEUED
    run.enqueued_at = timezone.now()
    run.started_at = run.alive_at = None
    run.agent = None
    run.worker = None
    run.gpu_uuid = ""
    run.stage = ""
    run.save(update_fields=["attempts", "job_secret_hash", "rq_job_id", "status", "enqueued_at", "started_at",
                            "alive_at", "agent", "worker", "gpu_uuid", "stage", "handed_back"])
    kwargs = {"run_id": run.pk, "attempt": run.attempts}
    queue_name, job_id = run.queue_name, run.rq_job_id
    # robust: if Redis is down the run stays queued and the sweeper enqueues it again.
    transaction.on_commit(lambda: queueing.enqueue_judging(queue_name, job_id, kwargs, at_front=at_front), robust=True)


def start(run, agent, *, worker=None, gpu_uuid="", harness_version=""):
    """Give the (locked, startable: judging.check_startable) run's attempt to this agent's worker;
    returns (run, a fresh secret). A repeated start by the same agent re-issues the secret. The harness
    version the worker declared is kept with the run (the dataset export names it)."""
    was_queued = run.status == RunStatus.QUEUED
    secret = new_token()
    run.job_secret_hash = hash_secret(secret)
    run.status = RunStatus.RUNNING
    run.started_at = timezone.now()
    run.agent = agent
    run.worker = worker
    run.gpu_uuid = gpu_uuid or ""
    run.harness_version = harness_version or ""
    run.stage = ""  # a repeated start begins again
    run.save(update_fields=["job_secret_hash", "status", "started_at", "agent", "worker", "gpu_uuid", "harness_version",
                            "stage"])
    if was_queued:
        after_leaving_queue(run)
    return run, secret


def finish(run, verdict, **figures):
    """The run is judged: done with `verdict` and the figures of its report (model fields)."""
    run.status = RunStatus.DONE
    run.verdict = verdict
    run.finished_at = timezone.now()
    for name, value in figures.items():
        setattr(run, name, value)
    run.save()
    after_leaving_queue(run)


def give_up(run, reason):
    """No agent's result will come: done with `internal_error`. The attempt's agent and secret stay, so
    its report, if it comes after all, is the verdict (judging.record_result)."""
    run.status = RunStatus.DONE
    run.verdict = Verdict.INTERNAL_ERROR
    run.finished_at = timezone.now()
    run.result = None
    run.save(update_fields=["status", "verdict", "finished_at", "result"])
    audit.record("run.verdict", run, actor_label="sweeper", after={"verdict": run.verdict}, reason=reason)
    after_leaving_queue(run)


def requeue(run, reason, actor_label="sweeper"):
    """The next attempt, at the front of the queue; or, attempts spent, the end (`give_up`)."""
    if run.spent_attempts >= settings.RUN_MAX_ATTEMPTS:  # attempts a worker handed back unjudged do not count
        give_up(run, f"{reason}, {run.attempts} attempts spent")
    else:
        audit.record("run.requeued", run, actor_label=actor_label, reason=reason,
                     before={"attempt": run.attempts, "status": run.status})
        queue(run, at_front=True)


def hand_back_unspent(run, *, actor_label, reason, action="run.requeued", before=None, enqueue=True):
    """The (locked) run goes back as a new attempt that spends none of its attempts: the host or worker
    could not take it (draining, outdated, its own second judging, a job it dropped, a job id of an
    older site). Audited; at the front of its queue, unless the caller keeps it waiting (`enqueue`)."""
    run.worker_refusals += 1
    run.save(update_fields=["worker_refusals"])
    audit.record(action, run, actor_label=actor_label, reason=reason, before=before)
    if enqueue:
        queue(run, at_front=True)


def wait_for_another_host(run):
    """A second judging that only the host that judged the first could take: it waits in the database
    (released by confirming.release_waiting), not in Redis for that host to bounce."""
    run.status = RunStatus.WAITING
    run.rq_job_id = ""
    run.save(update_fields=["status", "rq_job_id"])


def cancel(run):
    """A cancel (an organizer's, or the run's contestant's): done with `cancelled`. A queued run's job
    leaves Redis. A running run's attempt joins `handed_back` (its agent and secret hash) and the run
    keeps no current secret, so whatever that attempt reports later is a late report, refused and kept
    as evidence (judging.record_result); the run keeps its agent, whose heartbeats are told to stop
    judging it (cancelling.attempts_to_stop)."""
    was_queued, was_running = run.status == RunStatus.QUEUED, run.status == RunStatus.RUNNING
    if was_running and run.agent_id and run.job_secret_hash:
        run.handed_back = [*(run.handed_back or []), {"attempt": run.attempts, "agent_id": run.agent_id,
                                                      "secret_hash": run.job_secret_hash,
                                                      "cancelled_at": timezone.now().isoformat()}][-16:]
        run.job_secret_hash = ""
    run.status = RunStatus.DONE
    run.verdict = Verdict.CANCELLED
    run.finished_at = timezone.now()
    run.stage = ""
    run.save(update_fields=["status", "verdict", "finished_at", "stage", "handed_back", "job_secret_hash"])
    if was_queued:
        queue_name, job_id = run.queue_name, run.rq_job_id
        # robust: a job left behind by a Redis failure is refused at `start` (the run is done)
        transaction.on_commit(lambda: queueing.remove_job(queue_name, job_id), robust=True)
    if was_queued or was_running:  # a running rejudge's run may be a final system test's last
        after_leaving_queue(run)


def release(contestant_id, gpu_type_id):
    """Queue the contestant's oldest waiting runs on this GPU type, as many as free slots allow.
    Returns how many were released."""
    Contestant.objects.select_for_update().filter(pk=contestant_id).first()
    waiting = scheduling.next_waiting(contestant_id, gpu_type_id)
    released = 0
    for run in Run.objects.select_for_update().filter(pk__in=list(waiting.values_list("pk", flat=True))).order_by("pk"):
        if run.status == RunStatus.WAITING:  # re-read under its lock
            queue(run)
            released += 1
    return released


def after_leaving_queue(run):
    """A fresh run left the queue (started, finished, cancelled, given up): its slot goes to the
    contestant's next waiting run. Never fails the caller's change: a release that fails is the
    sweeper's to redo."""
    if not run.fresh:
        if run.status == RunStatus.DONE:  # a rejudge's run or a second judging: perhaps a final system test's last
            from submissions.services import final_system_tests  # it creates runs through this module

            final_system_tests.after_run_done(run)
        return
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction survives a failure here
            release(run.submission.contestant_id, run.gpu_type_id)
    except Exception:
        log.exception("releasing waiting runs after run %s failed; the sweeper will release them", run.pk)


def release_waiting_runs():
    """The sweeper's pass: every contestant and GPU type with waiting runs gets its free slots filled.
    Returns how many runs were released."""
    released = 0
    for contestant_id, gpu_type_id in scheduling.waiting_pairs():
        with transaction.atomic():
            released += release(contestant_id, gpu_type_id)
    return released
