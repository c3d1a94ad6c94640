"""An organizer clears a run's unconfirmed time (timing_flags): after looking at the agent's
confirmation (kernel record, reference timed outside, the reason), they let the run count. The flag
becomes `timing_cleared`, the change is audited, the contestant's standings are recomputed. The same
for a provisional figure (services/confirming.py) the organizer vouches for: `second_judging_cleared`."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import Run
from submissions.rules import timing_flags
from submissions.services import audit, reasons, standings


class ClearingRefused(ValueError):
    """The clearance cannot be recorded as asked; the message says why."""


@transaction.atomic
def clear_timing(run_id, organizer, reason):
    run = Run.objects.select_for_update().select_related("submission__issue__season",
                                                          "submission__contestant").get(pk=run_id)
    reason = (reason or "").strip()
    if not timing_flags.awaits_clearance(run):
        raise ClearingRefused(_("run #%(id)s has no unconfirmed time to clear") % {"id": run.pk})
    if not reason:
        raise ClearingRefused(_("clearing a time needs a reason"))
    if reasons.too_long(reason):
        raise ClearingRefused(reasons.too_long(reason))
    before = list(run.flags)
    run.flags = [f for f in before if f != timing_flags.UNCONFIRMED] + [timing_flags.CLEARED]
    run.save(update_fields=["flags"])
    confirmation = ((run.result or {}).get("timing") or {}).get("confirmation")
    audit.record("run.timing_cleared", run, actor=organizer, before={"flags": before},
                 after={"flags": run.flags, "confirmation": confirmation}, reason=reason)
    submission = run.submission
    standings.refresh_for(submission.issue.season, submission.contestant, actor=organizer,
                          reason=f"time of run #{run.pk} cleared")
    return run


@transaction.atomic
def clear_second_judging(run_id, organizer, reason):
    """An organizer vouches for a passed figure that still awaits its second judging, or that a second
    judging contradicted (services/confirming.py): it ranks from now on (audited, standings refreshed)."""
    run = Run.objects.select_for_update().select_related("submission__issue__season",
                                                          "submission__contestant").get(pk=run_id)
    reason = (reason or "").strip()
    if not timing_flags.is_provisional(run):
        raise ClearingRefused(_("run #%(id)s has no provisional figure to clear") % {"id": run.pk})
    if not reason:
        raise ClearingRefused(_("clearing a figure needs a reason"))
    if reasons.too_long(reason):
        raise ClearingRefused(reasons.too_long(reason))
    before = list(run.flags)
    run.flags = [f for f in before if f not in timing_flags.PROVISIONAL] + [timing_flags.SECOND_CLEARED]
    run.save(update_fields=["flags"])
    audit.record("run.second_judging_cleared", run, actor=organizer, before={"flags": before},
                 after={"flags": run.flags, "speedup": run.speedup}, reason=reason)
    submission = run.submission
    standings.refresh_for(submission.issue.season, submission.contestant, actor=organizer,
                          reason=f"figure of run #{run.pk} cleared without a second judging's agreement")
    return run
