"""What the season settings page reads besides the season: the audit trail of its controls."""
from submissions.models import AuditEntry

HISTORY_ROWS = 30


def season_history(season, limit=HISTORY_ROWS):
    """The latest audit entries about the season itself (its settings, rules, freezes and exports),
    newest first."""
    return (AuditEntry.objects.filter(object_type="season", object_id=str(season.pk))
            .order_by("-created_at", "-pk")[:limit])
