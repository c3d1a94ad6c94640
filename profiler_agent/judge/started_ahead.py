"""Processes started ahead of their turn: the verifier, the confirmation's profiler and its check.

Each of them spends seconds importing torch before it does anything (3.2 s on the H100 host, about
a quarter of a warm judging each). Started before the judged process, they import while it runs
and then wait, blocked reading their settings on stdin, doing nothing on the CPU or the GPU, until
the judgement needs them: the settings go out the moment their turn comes, or they are cancelled.
They load no bundle code before their settings come, so nothing of theirs runs beside the timing.

A run's sweep spares every process the agent started for a run of its own (sandbox.process_sweep.live_runs),
whenever it started; they are started in the order they end in reverse all the same (the
confirmation's check, then its profiler, then the verifier, then the judged process).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable

from profiler_agent.sandbox.process import PendingInput


class StartedAhead:
    """`start(pending, on_started)` runs a sandboxed process (run_sandboxed with stdin_data=pending
    and on_started) in a thread; the constructor returns once the process exists."""

    def __init__(self, start: Callable[[PendingInput, Callable[[], None]], object]):
        self._input = PendingInput()
        self._exists = threading.Event()
        self._outcome: object = None
        self._error: BaseException | None = None
        self._done = False
        self._thread = threading.Thread(target=self._run, args=(start,), name="started-ahead", daemon=True)
        self._thread.start()
        self._exists.wait()

    def _run(self, start) -> None:
        try:
            self._outcome = start(self._input, self._exists.set)
        except BaseException as exc:  # noqa: BLE001  (handed to whoever finishes it)
            self._error = exc
        finally:
            self._exists.set()

    def finish(self, data: bytes, hold: contextlib.AbstractContextManager | None = None):
        """Send its settings and wait for its end; what `start` returned (a SandboxRun, say).
        `hold` is held from the sending to the end (a build folder's lock, say)."""
        with hold or contextlib.nullcontext():
            self._input.send(data)
            self._thread.join()
        self._done = True
        if self._error is not None:
            raise self._error
        return self._outcome

    def waiting(self) -> bool:
        """Still waiting for its settings: neither sent, cancelled, nor ended on its own."""
        return not self._done and not self._input.given() and self._thread.is_alive() and self._input.alive()

    def cancel(self) -> None:
        """Not needed after all: it ends without its settings. Safe to call more than once."""
        if not self._done:
            self._input.cancel()
            self._thread.join()
            self._done = True


def cancel_all(*processes: StartedAhead | None) -> None:
    for process in processes:
        if process is not None:
            process.cancel()


