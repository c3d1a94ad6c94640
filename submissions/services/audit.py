"""The audit trail: append-only records of every change to a verdict, score, review or standing."""
from submissions.models import AuditEntry


def record(action, obj, *, actor=None, actor_label="", before=None, after=None, reason=""):
    label = actor_label or (actor.get_username() if actor is not None else "system")
    return AuditEntry.objects.create(
        actor=actor,
        actor_label=label,
        action=action,
        object_type=obj._meta.model_name,
        object_id=str(obj.pk),
        before=before,
        after=after,
        reason=reason,
    )
