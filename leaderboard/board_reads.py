"""What a board rendering read, and whether a season's changes since have touched it.

A rendering declared narrow (board_cache.cached(..., narrow=True)) names the rows it shows with
`depends_on` (or `shown_rows`); everything else it shows of the season is what a journal entry of
"anything" changes (submissions/board_versions.py). Its reads are collected per thread, nested
renderings adding theirs to the one they are part of, and kept with the cached entry: a later version
whose changes since lie outside them shows the same (`unchanged_since`).
"""
import threading
from contextlib import contextmanager

from submissions import board_versions

_collecting = threading.local()  # .stack: the reads of the renderings under way in this thread


class Reads:
    """{board: [[low, high] key span (hex), ...] or None (the whole board)}, or None when the
    rendering may show anything of the season."""

    def __init__(self, narrow):
        self.boards = {} if narrow else None

    def add(self, boards):
        self.boards = None if self.boards is None or boards is None else board_versions.merged(self.boards, boards)


def _stack():
    stack = getattr(_collecting, "stack", None)
    if stack is None:
        stack = _collecting.stack = []
    return stack


@contextmanager
def collecting(narrow):
    """The Reads of the rendering made inside the block."""
    reads = Reads(narrow)
    stack = _stack()
    stack.append(reads)
    try:
        yield reads
    finally:
        stack.pop()


def report(boards):
    """The value being served read `boards` (an entry's reads): so did the rendering it is part of."""
    stack = _stack()
    if stack:
        stack[-1].add(boards)


def depends_on(board, *keys):
    """The rendering under way shows the rows of `board` whose board keys (bytes) lie between `keys`'
    lowest and highest, or the whole board when no key is given."""
    report({board: [board_versions.span(*keys)] if keys else None})


def shown_rows(board, rows):
    """`rows`, a whole board's consecutive rows in board order, named as what the rendering under way
    shows of `board` (depends_on): a snapshot's rows (no keys) or none, the whole board."""
    keyed = [row for row in rows if hasattr(row, "board_key")]
    if keyed and len(keyed) == len(rows):
        depends_on(board, bytes(keyed[0].board_key), bytes(keyed[-1].board_key))
    else:
        depends_on(board)
    return rows


def unchanged_since(season, version, reads):
    """Whether every change to `season` after `version` (its journal) lies outside `reads`: a rendering
    of `version` that read them shows what the current version would. False when the journal does
    not reach back to `version`."""
    if reads is None:
        return False
    journal = board_versions.journal(season)
    since = next((i for i, (v, _) in enumerate(journal) if v == version), None)
    if since is None:
        return False
    for _, changes in journal[since + 1:]:
        if changes is None:
            return False
        for board, spans in changes.items():
            if board not in reads:
                continue
            if spans is None or reads[board] is None or any(
                    low <= shown_high and high >= shown_low for low, high in spans for shown_low, shown_high in reads[board]):
                return False
    return True
