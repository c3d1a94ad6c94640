"""An organizer cancels a run no agent has started (queued in Redis, or waiting for a slot): it is done
with the verdict `cancelled`, its job leaves Redis, and the change is audited with the reason. A run
being judged cannot be cancelled this way: its agent would report anyway."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import Run, RunStatus
from submissions.services import audit, run_states


class CancelRefused(ValueError):
    """The run cannot be cancelled; the message says why."""


@transaction.atomic
def cancel_run(run_id, organizer, reason):
    run = Run.objects.select_for_update(of=("self",)).select_related("gpu_type", "submission").get(pk=run_id)
    reason = (reason or "").strip()
    if run.status == RunStatus.RUNNING:
        raise CancelRefused(_("run #%(id)s is being judged by an agent; only a queued or waiting run can be cancelled")
                            % {"id": run.pk})
    if run.status == RunStatus.DONE:
        raise CancelRefused(_("run #%(id)s is already finished (%(verdict)s)")
                            % {"id": run.pk, "verdict": run.get_verdict_display()})
    if not reason:
        raise CancelRefused(_("cancelling a run needs a reason (it is kept in the audit trail)"))
    before = {"status": run.status, "attempts": run.attempts, "rq_job_id": run.rq_job_id}
    run_states.cancel(run)
    audit.record("run.cancelled", run, actor=organizer, before=before,
                 after={"status": run.status, "verdict": run.verdict}, reason=reason)
    return run
