"""Cancelling a run: it is done at once with the verdict `cancelled`, and the change is audited.

An organizer cancels a queued, waiting or running run, with a reason. A queued run's job leaves Redis.
A running run's agent is told to stop judging it in the answer to its worker's next heartbeat
(`attempts_to_stop`, the answer's `stop_judging`), and whatever that attempt reports later is refused
as a late report and kept as evidence (run_states.cancel): a bundle whose forward never returns holds
its worker for seconds, not the whole run limit.

A contestant cancels their own runs that no agent has started (a reason is optional), but not those an
organizer's process queued (a rejudge, a second judging): those are the organizers' to cancel."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import AgentWorker, AuditEntry, Run, RunStatus, Verdict
from submissions.services import audit, reasons, run_states

OWN_REASON_MAX_CHARS = 2000


class CancelRefused(ValueError):
    """The run cannot be cancelled; the message says why."""


class NotYours(CancelRefused):
    """A contestant asked to cancel another's run."""


def _locked(run_id):
    return (Run.objects.select_for_update(of=("self",)).select_related("gpu_type", "submission__contestant")
            .get(pk=run_id))


def _refuse_unless_unstarted(run):
    if run.status == RunStatus.RUNNING:
        raise CancelRefused(_("run #%(id)s is being judged by an agent; only a queued or waiting run can be cancelled")
                            % {"id": run.pk})
    if run.status == RunStatus.DONE:
        raise CancelRefused(_("run #%(id)s is already finished (%(verdict)s)")
                            % {"id": run.pk, "verdict": run.get_verdict_display()})


def _refuse_if_finished(run):
    if run.status == RunStatus.DONE:
        raise CancelRefused(_("run #%(id)s is already finished (%(verdict)s)")
                            % {"id": run.pk, "verdict": run.get_verdict_display()})


def _cancel(run, actor, reason, **after):
    before = {"status": run.status, "attempts": run.attempts, "rq_job_id": run.rq_job_id}
    if run.status == RunStatus.RUNNING:  # who was judging it, and since when
        before.update(agent=run.agent.name if run.agent_id else None, worker=run.worker.name if run.worker_id else None,
                      started_at=run.started_at.isoformat() if run.started_at else None, stage=run.stage)
    stopping = run.status == RunStatus.RUNNING
    run_states.cancel(run)
    if stopping:
        AgentWorker.objects.filter(current_run=run).update(current_run=None)  # the fleet page: idle again
        after["agent_told_to_stop"] = True
    audit.record("run.cancelled", run, actor=actor, before=before,
                 after={"status": run.status, "verdict": run.verdict, **after}, reason=reason)
    return run


def organizer_reason(run):
    """The reason an organizer gave for cancelling the run, shown to its contestant; None when the run
    was not cancelled by an organizer (its contestant cancelled it, or it is not cancelled)."""
    if run.verdict != Verdict.CANCELLED:
        return None
    entry = (AuditEntry.objects.filter(action="run.cancelled", object_type="run", object_id=str(run.pk),
                                       actor__isnull=False)
             .exclude(actor_id=run.submission.contestant.user_id).order_by("-created_at", "-pk").first())
    return entry.reason if entry else None


def organizer_cancellable(run) -> bool:
    """Whether an organizer may cancel the run now (cancel_run): anything not finished."""
    return run.status in (RunStatus.QUEUED, RunStatus.WAITING, RunStatus.RUNNING)


@transaction.atomic
def cancel_run(run_id, organizer, reason):
    """An organizer cancels a queued, waiting or running run, with a reason (audited as `run.cancelled`).
    A running run is done at once; its agent stops judging it at its next heartbeat (attempts_to_stop)."""
    run = _locked(run_id)
    reason = (reason or "").strip()
    _refuse_if_finished(run)
    if not reason:
        raise CancelRefused(_("cancelling a run needs a reason (it is kept in the audit trail)"))
    if reasons.too_long(reason):
        raise CancelRefused(reasons.too_long(reason))
    return _cancel(run, organizer, reason)


MAX_NAMED_ATTEMPTS = 16  # as many as a heartbeat may vouch for (recovery.MAX_NAMED_RUNS)


def attempts_to_stop(agent, judging_now):
    """Of the attempts an agent's heartbeat says it judges ((run id, attempt) pairs), those whose run
    was cancelled while this agent judged that attempt: its worker stops judging them. One query."""
    named = [(run_id, attempt) for run_id, attempt in (judging_now or [])[:MAX_NAMED_ATTEMPTS]]
    if not named:
        return []
    cancelled = (Run.objects.filter(pk__in={run_id for run_id, _ in named}, agent=agent, status=RunStatus.DONE,
                                    verdict=Verdict.CANCELLED).values_list("pk", "attempts", "handed_back"))
    stopped = {(pk, item.get("attempt")) for pk, attempts, handed_back in cancelled
               for item in handed_back or [] if "cancelled_at" in item and item.get("attempt") == attempts
               and item.get("agent_id") == agent.pk}
    return [{"run_id": run_id, "attempt": attempt} for run_id, attempt in named if (run_id, attempt) in stopped]


def own_cancellable(run) -> bool:
    """Whether the run's contestant may cancel it now (cancel_own_run): not started, and theirs to cancel."""
    return run.status in (RunStatus.QUEUED, RunStatus.WAITING) and run.fresh


@transaction.atomic
def cancel_own_run(run_id, user, reason=""):
    """The contestant (`user`) cancels a run of their own submission that no agent has started. Audited
    as `run.cancelled` with them as actor and their reason, if they gave one."""
    run = _locked(run_id)
    reason = (reason or "").strip()
    if run.submission.contestant.user_id != user.pk:
        raise NotYours(_("run #%(id)s is not yours: only the contestant who submitted it can cancel it")
                       % {"id": run.pk})
    _refuse_unless_unstarted(run)
    if not run.fresh:
        raise CancelRefused(_("run #%(id)s was queued by the organizers (a rejudge or a second judging): only an "
                              "organizer can cancel it") % {"id": run.pk})
    if len(reason) > OWN_REASON_MAX_CHARS:
        raise CancelRefused(_("a reason has at most %(count)s characters; this one has %(length)s")
                            % {"count": OWN_REASON_MAX_CHARS, "length": len(reason)})
    return _cancel(run, user, reason, cancelled_by="contestant")
