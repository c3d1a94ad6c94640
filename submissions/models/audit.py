"""The append-only audit trail."""
from django.conf import settings
from django.db import models


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
