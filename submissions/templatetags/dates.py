"""`{{ value|when }}`: a datetime in the reader's language, inside a machine-readable `<time>`.

The text uses Django's named formats of the active language (2026年11月22日 17:58 in Chinese,
11/22/2026 5:58 p.m. in English); the `datetime` attribute keeps ISO 8601 for scripts and tests.
"""
from django import template
from django.utils.formats import date_format, time_format
from django.utils.html import format_html
from django.utils.translation import gettext as _, ngettext

register = template.Library()


@register.filter(expects_localtime=True)
def when(value, fmt="SHORT_DATETIME_FORMAT"):
    """fmt: a named format (SHORT_DATETIME_FORMAT, DATETIME_FORMAT, DATE_FORMAT, ...) or "seconds"
    (the short date and the time to the second, for audit trails)."""
    if not value:
        return ""
    if fmt == "seconds":
        text = f"{date_format(value, 'SHORT_DATE_FORMAT')} {time_format(value, 'H:i:s')}"
    else:
        text = date_format(value, fmt)
    return format_html('<time datetime="{}">{}</time>', value.isoformat(), text)


@register.filter
def age(seconds):
    """`{{ seconds|age }}`: how long ago, to the second under two minutes (a heartbeat's age matters
    there), in minutes under two hours, in hours and minutes beyond."""
    if seconds is None:
        return ""
    seconds = int(seconds)
    if seconds < 120:
        return ngettext("%(count)d second ago", "%(count)d seconds ago", seconds) % {"count": seconds}
    minutes = seconds // 60
    if minutes < 120:
        return ngettext("%(count)d minute ago", "%(count)d minutes ago", minutes) % {"count": minutes}
    return _("%(hours)d h %(minutes)d min ago") % {"hours": minutes // 60, "minutes": minutes % 60}


@register.filter
def stopwatch(seconds):
    """`{{ seconds|stopwatch }}`: 0:07, 12:34, 1:02:03 (static/js/live-runs.js ticks it the same way)."""
    if seconds is None:
        return ""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
