"""Rendered boards in Django's cache ("boards", settings.CACHES): a leaderboard page's content, the
table it polls, a GPU board's table, the home page's top ten, a JSON page's bytes, a board's row
count. Rendering a page of 50 rows was most of a leaderboard request's cost (template rendering, not
SQL); with 8 clients on 2 cores it queued every page past 100 ms (docs/performance.md).

An entry holds its rendering and the season's board version it was rendered at (submissions/
board_versions.py), a token replaced in the transaction of every change to what the season's boards
show: a request that reads the season's version and finds an entry of that version serves it.
Entries of other databases or of rolled-back transactions never match (a token is never drawn
twice). The key names the board the viewer is held to (live, or a freeze's snapshot: organizers see
the live one, under a notice of their own), the language and the page; never the viewer: personal
parts (the menu, the CSRF token, messages) stay outside the cached parts. The code's own version is
in the key too, so a deployment's new templates or translations are never mixed with the old ones'.

After a change every page is stale at once, and every client asks for it again. Each page is rendered
once at the new version (single flight: per process, and between processes through `add`, Redis's
SET NX, when the cache is shared); the requests that come while it renders are served the rendering
before it, when that is at most BOARD_STALE_SECONDS behind a committed change (below), else they wait
for the one rendering; a request alone in its process waits for it too. Under load (other requests in flight in this process) the request that finds a
page stale is served the previous rendering too, within the same bound, and the page is rendered by
the process's board renderer thread: a request that rendered 11 pages' worth of a burst itself was the
tail of the board's latency (docs/performance.md). A visitor alone never sees an older board than the
database holds: a request that is the only one in its process renders the page itself, or waits
for the rendering under way (the renderer thread may still be working through a burst's pages).

The bound: an entry rendered at version V shows every change committed before V was replaced (each
change replaces it). If this process read V as the current version at time s (stamped before the
season's query, `read`), V was replaced after s, so whatever the entry misses committed after s; it is
served only while now - s <= BOARD_STALE_SECONDS.

An entry of an earlier version is still the current version's when nothing it shows has changed
since: the season's journal (submissions/board_versions.py) says what each version changed, and an
entry records what its rendering read (`narrow` renderings: the span of board keys of their rows,
`board_reads.depends_on`, and the season's own fields and row count, which only journal entries of "anything"
change). When every change since its version lies outside those spans, the entry is stamped with the
current version and served as it: a review re-renders the pages between the contestant's old place
and new one, not every page of the board. An entry is never stamped past BOARD_CACHE_SECONDS after
its rendering.

When the cache cannot be reached the page is rendered as if it had no entry (and said once a minute).
"""
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import redis
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import close_old_connections
from django.utils import translation

from leaderboard import board_reads
from submissions import board_versions

logger = logging.getLogger(__name__)
_warned_at = [0.0]

# How long a request waits for another's rendering before rendering itself (that one may have died).
WAIT_SECONDS = 5
# How long a shared cache's claim on a rendering lasts when its process dies before releasing it.
CLAIM_SECONDS = 30
KEPT_VERSIONS = 8  # per season, the versions whose last reading this process remembers

_lock = threading.Lock()
_read_at = {}  # season pk -> OrderedDict(version -> latest time.monotonic() it was read as current)
_flights = {}  # (key, version) -> _Flight: the renderings under way in this process
_in_flight = [0]  # requests this process is answering (counted by RequestsInFlightMiddleware)
_renderer = []  # the process's board renderer: one thread, made when first needed (after a fork)
_kept = OrderedDict()  # (season pk, version, parts) -> a value `per_version` keeps in this process
KEPT_VALUES = 64


class _Flight:
    def __init__(self):
        self.landed = threading.Event()
        self.value = None  # (rendering,) once rendered; stays None when the rendering failed
        self.begun = True  # False while it waits for the renderer thread: a request may take it over


def _take_over(flight):
    """Whether this caller renders `flight`, which waited for the renderer thread: the renderer or the
    first request to need it at this version, never both. A request waiting for the renderer could
    wait behind a rendering that itself waits for one queued behind it."""
    with _lock:
        if flight.begun:
            return False
        flight.begun = True
        return True


@lru_cache(maxsize=1)
def code_version():
    """What the renderings are made by: the site's templates, translations and Python sources."""
    digest = hashlib.sha256()
    for folder in ("templates", "locale", "config", "leaderboard", "clarifications", "submissions"):
        for path in sorted((settings.BASE_DIR / folder).rglob("*")):
            if path.suffix in (".html", ".mo", ".py") and "migrations" not in path.parts:
                stat = path.stat()
                digest.update(f"{path.relative_to(settings.BASE_DIR)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def board_of(freeze):
    """The board a viewer held to `freeze` (None: the live one) sees."""
    return f"frozen-{freeze.pk}" if freeze is not None else board_versions.LIVE


def gpu_board_of(freeze, gpu_type_id):
    """The GPU type's board a viewer held to `freeze` (selectors.figures_freeze; None: the live one) sees."""
    board = board_versions.gpu_board(gpu_type_id)
    return f"{board_of(freeze)}-{board}" if freeze is not None else board


def key(season, *parts):
    detail = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]
    return f"board:{code_version()}:{season.pk}:{detail}"


def read(fetch):
    """`fetch()`: a season (or None), marked with a time before it was read (see `mark_read`)."""
    since = time.monotonic()
    season = fetch()
    if season is not None:
        mark_read(season, since)
    return season


def mark_read(season, since):
    """`season` was read from the database after `since` (time.monotonic()): its board version was
    current then or later. Only a season so marked may be served a rendering of an earlier version."""
    season.board_read_at = since


def _note_read(season):
    since = getattr(season, "board_read_at", None)
    if since is None:
        return
    with _lock:
        versions = _read_at.setdefault(season.pk, OrderedDict())
        if since > versions.get(season.board_version, float("-inf")):
            versions[season.board_version] = since
            versions.move_to_end(season.board_version)
            while len(versions) > KEPT_VERSIONS:
                versions.popitem(last=False)


def _recently_current(season, version):
    """Whether this process read `version` as the season's current one at most BOARD_STALE_SECONDS
    ago: a rendering of it then misses only changes committed since."""
    with _lock:
        since = _read_at.get(season.pk, {}).get(version)
    return since is not None and time.monotonic() - since <= settings.BOARD_STALE_SECONDS


def _unreachable(exc):
    if time.monotonic() - _warned_at[0] > 60:
        _warned_at[0] = time.monotonic()
        logger.warning("the board cache is unreachable (%s); rendering boards uncached", exc)


def _shared(cache):
    return not isinstance(cache, LocMemCache)


def _claim_name(name, version):
    return f"{name}:rendering:{version}"


def _claim(cache, name, version):
    """A flight of this request's own when no rendering of `name` at `version` is under way, here or
    (a shared cache) in another process; None when one is."""
    with _lock:
        if (name, version) in _flights:
            return None
        flight = _flights[name, version] = _Flight()
    if _shared(cache):
        try:
            claimed = cache.add(_claim_name(name, version), 1, CLAIM_SECONDS)
        except (redis.RedisError, OSError) as exc:
            _unreachable(exc)
            claimed = True
        if not claimed:  # another process renders it: this one's waiters look for its entry
            _land(name, version, flight)
            return None
    return flight


def _landed_meanwhile(cache, name, version, flight):
    """The entry of `version` when another rendering stored it between this request's read of the entry
    and its claim (its flight had landed): the claim is given back and nothing is rendered twice."""
    reachable, entry = _entry(cache, name)
    if not reachable or entry is None or entry[0] != version:
        return None
    if _shared(cache):
        try:
            cache.delete(_claim_name(name, version))
        except (redis.RedisError, OSError) as exc:
            _unreachable(exc)
    _land(name, version, flight, (entry[1], entry[2]))
    return entry


def _land(name, version, flight, value=None):
    with _lock:
        _flights.pop((name, version), None)
    flight.value = value
    flight.landed.set()


def _render(cache, name, version, compute, flight, narrow):
    try:
        with board_reads.collecting(narrow) as reads:
            value = compute()
    except BaseException:
        _land(name, version, flight)
        raise
    try:
        cache.set(name, (version, value, reads.boards, time.time()), settings.BOARD_CACHE_SECONDS)
        if _shared(cache):
            cache.delete(_claim_name(name, version))
    except (redis.RedisError, OSError) as exc:
        _unreachable(exc)
    _land(name, version, flight, (value, reads.boards))
    board_reads.report(reads.boards)
    return value


def _uncached(compute):
    board_reads.report(None)
    return compute()


def _served(entry):
    board_reads.report(entry[2])
    return entry[1]


def _still_current(season, cache, name, entry):
    """Whether `entry`, rendered at an earlier version, shows what the season's current version would
    (board_reads.unchanged_since); it is then stamped with that version, never past
    BOARD_CACHE_SECONDS after its rendering."""
    version, value, reads, rendered_at = entry
    age = time.time() - rendered_at
    if not 0 <= age < settings.BOARD_CACHE_SECONDS or not board_reads.unchanged_since(season, version, reads):
        return False
    try:
        cache.set(name, (season.board_version, value, reads, rendered_at), settings.BOARD_CACHE_SECONDS - age)
    except (redis.RedisError, OSError) as exc:
        _unreachable(exc)
    return True


def _wait_for(cache, name, version, compute, narrow):
    """The rendering under way (here, or in another process through the shared cache); this
    request's own when it does not come within WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    with _lock:
        flight = _flights.get((name, version))
    if flight is not None:
        if _take_over(flight):
            return _render(cache, name, version, compute, flight, narrow)
        if flight.landed.wait(WAIT_SECONDS) and flight.value is not None:
            value, reads = flight.value
            board_reads.report(reads)
            return value
    elif _shared(cache):
        while time.monotonic() < deadline:
            time.sleep(0.005)
            reachable, entry = _entry(cache, name)
            if not reachable:
                break
            if entry is not None and entry[0] == version:
                return _served(entry)
    reachable, entry = _entry(cache, name)
    if not reachable:
        return _uncached(compute)
    if entry is not None and entry[0] == version:
        return _served(entry)
    flight = _claim(cache, name, version)
    if flight is None:
        return _uncached(compute)
    landed = _landed_meanwhile(cache, name, version, flight)
    return _served(landed) if landed is not None else _render(cache, name, version, compute, flight, narrow)


def _entry(cache, name):
    """(whether the cache answered, its (version, rendering) under `name` or None)."""
    try:
        return True, cache.get(name)
    except (redis.RedisError, OSError) as exc:
        _unreachable(exc)
        return False, None


def cached(season, parts, compute, *, per_language=False, fresh=False, narrow=False):
    """`compute()`, or what it returned for the same season version and `parts` (and language, when
    the value is text in it), or while another request computes that: what it returned for a version
    at most BOARD_STALE_SECONDS behind (the module's docstring). `fresh`: never an earlier version's
    (what a rendering kept as this version's is made of). `narrow`: what `compute()` shows of the
    season's boards is the rows it names with `board_reads.depends_on` (and the values `cached` hands it), and of
    the season otherwise only what a journal entry of "anything" changes: its rendering is then still
    the current one after changes to other rows."""
    if per_language:
        parts = (*parts, translation.get_language())
    name = key(season, *parts)
    version = season.board_version
    cache = caches["boards"]
    _note_read(season)
    reachable, entry = _entry(cache, name)
    if not reachable:
        return _uncached(compute)
    if entry is not None and (entry[0] == version or _still_current(season, cache, name, entry)):
        return _served(entry)
    flight = _claim(cache, name, version)
    if flight is not None and (landed := _landed_meanwhile(cache, name, version, flight)) is not None:
        return _served(landed)
    if flight is not None:
        if not fresh and entry is not None and _recently_current(season, entry[0]) and _others_in_flight():
            _render_later(cache, name, version, compute, flight, narrow)
            return _served(entry)
        return _render(cache, name, version, compute, flight, narrow)
    if not fresh and entry is not None and _recently_current(season, entry[0]) and _others_in_flight():
        return _served(entry)
    return _wait_for(cache, name, version, compute, narrow)


def per_version(season, parts, compute):
    """`compute()`, kept in this process (not copied, never shared) while the season's version is the
    one read: after a change several renderings of a burst read the same rows (a page, the table it
    polls, the JSON of the same offset)."""
    name = (season.pk, season.board_version, parts)
    with _lock:
        if name in _kept:
            _kept.move_to_end(name)
            return _kept[name]
    value = compute()
    with _lock:
        _kept[name] = value
        while len(_kept) > KEPT_VALUES:
            _kept.popitem(last=False)
    return value


def request_began():
    with _lock:
        _in_flight[0] += 1


def request_ended():
    with _lock:
        _in_flight[0] -= 1


def _others_in_flight():
    with _lock:
        return _in_flight[0] > 1


def _render_later(cache, name, version, compute, flight, narrow):
    """`compute()` rendered by the board renderer thread, in this request's language; the flight lands
    when it is done, and until then the requests of this version wait for it or are served the
    previous rendering as they would be for a request rendering it."""
    with _lock:
        if not _renderer:
            _renderer.append(ThreadPoolExecutor(1, thread_name_prefix="board-renderer"))
        flight.begun = False
    _renderer[0].submit(_render_in_background, translation.get_language(), cache, name, version, compute, flight,
                        narrow)


def _render_in_background(language, cache, name, version, compute, flight, narrow):
    if not _take_over(flight):  # a request needed it first and rendered it
        return
    close_old_connections()  # as a request does: the thread's connection is kept (CONN_MAX_AGE) or renewed
    try:
        with translation.override(language):
            _render(cache, name, version, compute, flight, narrow)
    except Exception:  # _render has landed the flight: its waiters render for themselves
        logger.exception("rendering a board in the background failed")
    finally:
        close_old_connections()
