"""Where a season stands in time: not started, running (until its end, or with none set) or ended, and
how many seconds are left to its start or its end. What the season pages, the public API and
`gpucf seasons` show; static/js/season-clock.js ticks the pages' countdowns from the same seconds.

`Season.is_open` (whether it takes submissions) is the organizers' switch and is not read here: a
season may be open before its start or closed before its end."""
from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from django.utils import timezone
from django.utils.translation import gettext as _

UPCOMING, RUNNING, ENDED = "upcoming", "running", "ended"
PHASES = (UPCOMING, RUNNING, ENDED)


@dataclass(frozen=True)
class SeasonClock:
    starts_at: datetime
    ends_at: Optional[datetime]
    phase: str
    # None when the start has passed; never negative
    seconds_to_start: Optional[int]
    # None without an end date, or once it has passed
    seconds_left: Optional[int]

    @property
    def has_end(self):
        return self.ends_at is not None


def _whole_seconds(later, now):
    return max(0, int((later - now).total_seconds()))


def clock_of(season, now=None) -> SeasonClock:
    now = now or timezone.now()
    if now < season.starts_at:
        phase = UPCOMING
    elif season.ends_at is not None and season.ends_at <= now:
        phase = ENDED
    else:
        phase = RUNNING
    return SeasonClock(
        starts_at=season.starts_at, ends_at=season.ends_at, phase=phase,
        seconds_to_start=_whole_seconds(season.starts_at, now) if phase == UPCOMING else None,
        seconds_left=_whole_seconds(season.ends_at, now) if season.ends_at is not None and phase != ENDED else None)


def days_pattern():
    """The countdown's form beyond a day, with %(days)s and %(clock)s (the script fills it the same way)."""
    return _("%(days)s d %(clock)s")


def countdown(seconds):
    """`2 d 03:04:05`, `03:04:05`: as static/js/season-clock.js writes it."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return days_pattern() % {"days": days, "clock": clock} if days else clock

