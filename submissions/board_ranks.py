"""Ranks read from board keys (ranking.RankingRule.board_key), never stored.

A rank is 1 + the rows of the same board with a smaller key, so a contestant who climbs to the top
writes one row instead of shifting every rank below. Reading costs one count of the index entries
before the first row asked for, plus reading the keys between the first row's and the last's.
"""
import bisect


def key_of(row):
    return bytes(row.board_key)  # PostgreSQL hands bytea back as a memoryview


def attach(board, rows):
    """Sets `.rank` on each of `rows` (model instances of `board`, any order, any subset: a page, a
    search's matches); `board` is the unfiltered queryset of the board they are ranked on."""
    keys = sorted({key_of(row) for row in rows})
    if not keys:
        return rows
    first, last = keys[0], keys[-1]
    before_first = board.filter(board_key__lt=first).count()
    # the keys from the first row's to the last's: a page's own rows, or a search's span of the board
    span = sorted(bytes(key) for key in board.filter(board_key__gte=first, board_key__lt=last).order_by()
                  .values_list("board_key", flat=True)) if last != first else []
    for row in rows:
        row.rank = 1 + before_first + bisect.bisect_left(span, key_of(row))
    return rows


def attach_in_order(board, rows, offset, key_before):
    """Sets `.rank` on `rows`, the rows of `board` at positions `offset`, `offset + 1`, ... in board
    order, where `key_before` is the key of the row at `offset - 1` (None at the top). Every row before
    the page has a key no greater than `key_before`, so when it is smaller than the first row's there
    are exactly `offset` of them: no query. Only a tie across the page's edge needs the count, and only
    for the rows sharing the first row's key: every row before the page is before any greater key."""
    keys = [key_of(row) for row in rows]
    if key_before is None:
        before_first = 0
    elif key_before < keys[0]:
        before_first = offset
    else:
        before_first = board.filter(board_key__lt=keys[0]).count()
    for row, key in zip(rows, keys):
        row.rank = 1 + (before_first if key == keys[0] else offset) + bisect.bisect_left(keys, key)
    return rows


def in_order(rows, board_of):
    """Yields `rows` (whole boards, each read in board order: key, then contestant) with `.rank` set as
    they pass, with no query; `board_of(row)` tells which board a row is on."""
    board, position, previous = object(), 0, None
    for row in rows:
        if board_of(row) != board:
            board, position, previous = board_of(row), 0, None
        position += 1
        key = key_of(row)
        if key != previous:
            rank, previous = position, key
        row.rank = rank
        yield row


class RankedRow:
    """Mixin of a board's model (which defines `board()`): `rank` is what attach or in_order set, else
    asked of the database for this row alone."""

    _rank = None

    @property
    def rank(self):
        if self._rank is None:
            attach(self.board(), [self])
        return self._rank

    @rank.setter
    def rank(self, value):
        self._rank = value

    def refresh_from_db(self, *args, **kwargs):
        super().refresh_from_db(*args, **kwargs)
        self._rank = None  # read again when next asked: the row may have moved
