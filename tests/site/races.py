"""Forcing an interleaving of two requests, each in its own thread and database connection (tests marked
django_db(transaction=True)): the first is held at a signal, inside its transaction, while the second
runs; the first goes on once the second finished or waits on a lock the first holds. On PostgreSQL that
wait is seen in pg_stat_activity; on SQLite (one writer at a time: the second waits for the first's
transaction to end at its BEGIN IMMEDIATE) a short pause stands for it."""
import threading
import time

from django.db import connection, connections

SQLITE_PAUSE_S = 1.0


def _in_thread(work, outcome):
    def target():
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - kept for the test to look at
            outcome["error"] = exc
        finally:
            connections.close_all()
    return threading.Thread(target=target)


def _locked_waiters():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # else one snapshot per transaction
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def _wait_done_or_blocked(thread, timeout=30.0):
    if connection.vendor != "postgresql":
        thread.join(SQLITE_PAUSE_S)
        return
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        if _locked_waiters():
            return
        thread.join(0.05)


def interleave(first, second, signal, sender, when=lambda instance: True):
    """Run `first()`; when its thread sends `signal` for `sender` (and `when(instance)`), run `second()`
    in another thread before letting `first` go on. Returns ({"value"| "error"} of first, of second)."""
    first_outcome, second_outcome = {}, {}
    second_thread = _in_thread(second, second_outcome)
    held = []

    def hold(sender, instance=None, **kwargs):
        if threading.current_thread() is first_thread and not held and when(instance):
            held.append(True)
            second_thread.start()
            _wait_done_or_blocked(second_thread)

    first_thread = _in_thread(first, first_outcome)
    signal.connect(hold, sender=sender, weak=False)
    try:
        first_thread.start()
        first_thread.join(60)
        if held:
            second_thread.join(60)
    finally:
        signal.disconnect(hold, sender=sender)
    assert held, "the first request never reached the point where the second was to run"
    return first_outcome, second_outcome
