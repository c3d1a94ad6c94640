"""`{% season_clock season %}`: the season's start and end and a countdown to whichever comes next,
rendered here and ticked by static/js/season-clock.js (which the fragment loads)."""
from django import template
from django.template.loader import render_to_string
from django.utils import timezone, translation

from submissions import season_clock

register = template.Library()

TEMPLATE = "submissions/_season_clock.html"


def _seconds_to(moment, now):
    """Whole seconds from now to `moment`, 0 once it has passed: what a page says stays the same while
    nothing in it changes."""
    return max(0, int((moment - now).total_seconds()))


def clock_context(season, now=None):
    now = now or timezone.now()
    clock = season_clock.clock_of(season, now)
    to_end_s = _seconds_to(season.ends_at, now) if season.ends_at else None
    return {
        "season": season, "clock": clock,
        # the script moves the line to the next phase when one reaches 0
        "to_start_s": _seconds_to(season.starts_at, now), "to_end_s": to_end_s,
        "until_start": season_clock.countdown(clock.seconds_to_start or 0),
        "until_end": season_clock.countdown(to_end_s or 0),
        "days_pattern": season_clock.days_pattern(),
        # the site's time zone (TIME_ZONE), named beside the times it shows
        "zone": timezone.localtime(season.starts_at).tzname(),
    }


@register.inclusion_tag(TEMPLATE)
def season_clock_line(season):
    return clock_context(season)


# The latest rendering of each season's clock per language and time zone, with the second it counted
# from: a leaderboard served from the board cache costs no template rendering for its clock (0.3 ms)
# more than once a second.
_latest = {}
KEPT = 256


def render_clock(season):
    """The fragment alone, as of this second: a page cached whole gets it put in fresh (leaderboard.views)."""
    now = timezone.now()
    second = int(now.timestamp())
    key = (translation.get_language(), timezone.get_current_timezone_name(), season.code, season.starts_at,
           season.ends_at)
    kept = _latest.get(key)
    if kept is not None and kept[0] == second:
        return kept[1]
    html = render_to_string(TEMPLATE, clock_context(season, now))
    if len(_latest) >= KEPT:
        _latest.clear()
    _latest[key] = (second, html)
    return html
