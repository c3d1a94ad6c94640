"""`{{ entry.before|fields }}`: an audit entry's before/after (stored JSON) as readable lines, one
field per line (`verdict: passed`), instead of Python's dict text."""
import json
import re
from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.formats import date_format, time_format
from django.utils.html import format_html, format_html_join

register = template.Library()

MAX_DEPTH = 2  # nested objects deeper than this are shown as compact JSON
MAX_TEXT = 240  # long values (a run's logs inside a result) are cut, the export keeps them whole
ISO_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)")  # a stored aware time


def _text(value):
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) if not isinstance(v, (dict, list)) else _json(v) for v in value) or "—"
    if isinstance(value, dict):
        return _json(value)
    if isinstance(value, str) and ISO_MOMENT.fullmatch(value):
        return _moment(value)
    return str(value)


def _moment(text):
    """A stored time (ISO 8601 with its offset) as the site writes times: the reader's short date and
    the time to the second, in the site's zone."""
    moment = timezone.localtime(datetime.fromisoformat(text.replace("Z", "+00:00")))
    return f"{date_format(moment, 'SHORT_DATE_FORMAT')} {time_format(moment, 'H:i:s')}"


def _json(value):
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def _cut(text):
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _lines(value, prefix="", depth=1):
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and item and depth < MAX_DEPTH:
            yield from _lines(item, f"{name}.", depth + 1)
        else:
            yield name, _cut(_text(item))


@register.filter
def fields(value):
    if value is None or value == {} or value == "":
        return ""
    if not isinstance(value, dict):
        return _cut(_text(value))
    return format_html('<dl class="fields">{}</dl>', format_html_join("", "<dt>{}</dt><dd>{}</dd>", _lines(value)))


@register.simple_tag
def reason_max_chars():
    """`maxlength="{% reason_max_chars %}"` on an organizer's reason input: the browser stops where the
    services would refuse (services/reasons.py)."""
    from submissions.services.reasons import REASON_MAX_CHARS

    return REASON_MAX_CHARS
