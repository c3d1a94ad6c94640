"""A standings row's cells (every column but the rank), rendered once per what they show.

After a review every board page is rendered again (board_cache), but only the reviewed contestant's
cells changed: the others' ranks may shift, their cells do not. Rendering 50 rows through the template
was most of a page's rendering (bench/site/leaderboard.py); a page now renders the rows it has not
seen and joins the rest. The key holds every value the cells show, the language, the time zone and the
rule's columns, so an entry can never show stale data: a change makes a new key.
"""
import threading
from collections import OrderedDict

from django.template.loader import get_template
from django.utils import timezone, translation

SHOWN = ("contestant_id", "accepted_count", "base_score", "bonus", "total_score", "submission_count",
         "first_submission_at", "best_speedup")
KEPT = 40_000  # rows: a 10,000-contestant board in two languages, twice over

_lock = threading.Lock()
_cells = OrderedDict()


def with_cells(rows, rule):
    """[(row, its cells' HTML), ...] for standings (live or frozen) shown under `rule`."""
    template = get_template("leaderboard/_standing_cells.html")
    shown_as = (translation.get_language(), timezone.get_current_timezone_name(), rule.name,
                tuple(sorted(rule.settings.items())))
    paired = []
    for row in rows:
        key = (shown_as, row.contestant.display_name, row.contestant.affiliation,
               *(getattr(row, field) for field in SHOWN))
        with _lock:
            cells = _cells.get(key)
            if cells is not None:
                _cells.move_to_end(key)
        if cells is None:
            cells = template.render({"s": row, "rule": rule})
            with _lock:
                _cells[key] = cells
                while len(_cells) > KEPT:
                    _cells.popitem(last=False)
        paired.append((row, cells))
    return paired
