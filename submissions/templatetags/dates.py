"""`{{ value|when }}`: a datetime in the reader's language, inside a machine-readable `<time>`.

The text uses Django's named formats of the active language (2026年11月22日 17:58 in Chinese,
11/22/2026 5:58 p.m. in English); the `datetime` attribute keeps ISO 8601 for scripts and tests.
"""
from django import template
from django.utils.formats import date_format, time_format
from django.utils.html import format_html

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
