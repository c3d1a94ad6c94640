"""An order to stop the judging in progress (the site cancelled its run): every sandboxed run watches
for it in the loop that watches its deadline, ends everything it started as it does at a timeout, and
raises JudgingStopped instead of returning; the judge makes no result.

Who may order it is the caller's business (`stoppable`, set by the worker's judge job for its run and
attempt); `python -m profiler_agent judge` sets none, and nothing ever stops."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

POLL_S = 0.1  # how often a sandboxed run looks, at most: the deadline loop's own step


class JudgingStopped(BaseException):
    """The judging was ordered to stop. A BaseException, as KeyboardInterrupt is: the judge's handlers
    that turn a failure into a verdict or a note (`except Exception`) must let it through."""


_ordered: list[Callable[[], bool]] = []


@contextlib.contextmanager
def stoppable(ordered: Callable[[], bool]) -> Iterator[None]:
    """While inside, `ordered()` says whether the judging must stop (read from any thread, often)."""
    _ordered[:] = [ordered]
    try:
        yield
    finally:
        _ordered.clear()


def requested() -> bool:
    try:
        ordered = _ordered[0]
    except IndexError:  # none set, or cleared by the judge's thread meanwhile
        return False
    return ordered()


def raise_if_requested(what: str = "") -> None:
    if requested():
        raise JudgingStopped(f"the judging was ordered to stop{f' ({what})' if what else ''}")
