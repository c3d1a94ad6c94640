"""An audit entry's stored before/after as the organizers' pages show it: a stored time reads as the
site writes times, not as raw ISO 8601 (the walk: a freeze's "After" read 2026-11-28T21:35:51.656892+00:00)."""
from django.utils import translation

from submissions.templatetags.audit import fields


def test_a_stored_time_reads_as_the_site_writes_times(settings):
    settings.TIME_ZONE = "UTC"
    with translation.override("en"):
        shown = str(fields({"frozen_at": "2026-11-28T21:35:51.656892+00:00", "reason": "2026-11-28T21 is no time"}))
    assert "2026-11-28T21:35:51" not in shown and "21:35:51" in shown
    assert "2026-11-28T21 is no time" in shown  # text that only starts like a time is left alone
    assert str(fields("2026-11-28T21:35:51Z")).endswith("21:35:51")
