"""Rendered boards in Django's cache ("boards", settings.CACHES): a leaderboard page's content, the
table it polls, a GPU board's table, the home page's top ten, a JSON page's bytes, a board's row
count. Rendering a page of 50 rows was most of a leaderboard request's cost (template rendering, not
SQL); with 8 clients on 2 cores it queued every page past 100 ms (docs/performance.md).

A key names the season's board version (submissions/board_versions.py), a token replaced in the
transaction of every change to what the season's boards show: an entry is never served once that
change is committed, wherever it was rendered, and old entries just expire. The key also names the
board the viewer is held to (live, or a freeze's snapshot: organizers see the live one, under a
notice of their own), the language and the page; never the viewer: personal parts (the menu, the
CSRF token, messages) stay outside the cached parts. The code's own version is in the key too, so a deployment's new
templates or translations are never mixed with the old ones' renderings.

When the cache cannot be reached the page is rendered as if it had no entry (and said once a minute).
"""
import hashlib
import logging
import time
from functools import lru_cache

import redis
from django.conf import settings
from django.core.cache import caches
from django.utils import translation

logger = logging.getLogger(__name__)
_warned_at = [0.0]


@lru_cache(maxsize=1)
def code_version():
    """What the renderings are made by: the site's templates, translations and Python sources."""
    digest = hashlib.sha256()
    for folder in ("templates", "locale", "leaderboard", "submissions"):
        for path in sorted((settings.BASE_DIR / folder).rglob("*")):
            if path.suffix in (".html", ".mo", ".py") and "migrations" not in path.parts:
                stat = path.stat()
                digest.update(f"{path.relative_to(settings.BASE_DIR)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def board_of(freeze):
    """The board a viewer held to `freeze` (None: the live one) sees."""
    return f"frozen-{freeze.pk}" if freeze is not None else "live"


def key(season, *parts):
    detail = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]
    return f"board:{code_version()}:{season.pk}:{season.board_version}:{detail}"


def _unreachable(exc):
    if time.monotonic() - _warned_at[0] > 60:
        _warned_at[0] = time.monotonic()
        logger.warning("the board cache is unreachable (%s); rendering boards uncached", exc)


def cached(season, parts, compute, *, per_language=False):
    """`compute()`, or what it returned for the same season version and `parts` (and language, when
    the value is text in it)."""
    if per_language:
        parts = (*parts, translation.get_language())
    name = key(season, *parts)
    cache = caches["boards"]
    try:
        value = cache.get(name)
    except (redis.RedisError, OSError) as exc:
        _unreachable(exc)
        return compute()
    if value is None:
        value = compute()
        try:
            cache.set(name, value, settings.BOARD_CACHE_SECONDS)
        except (redis.RedisError, OSError) as exc:
            _unreachable(exc)
    return value
