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
import time
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
        self.overran = False  # killed at finish's timeout
        self._held = contextlib.ExitStack()
        self.started_at = time.monotonic()  # what its start-up cost, measured against its job (profiled_target)
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

    def hold(self, held: contextlib.AbstractContextManager) -> None:
        """Hold `held` (a build folder's lock, say) from now until it ends or is cancelled."""
        self._held.enter_context(held)

    def give_turn(self) -> None:
        """Its turn at the GPU before its settings (a process started with child_channel.GPU_TURN)."""
        self._input.give_turn()

    def give(self, data: bytes) -> None:
        """Send its settings; it runs while the caller goes on (`finish` waits for its end)."""
        self._input.send(data)

    def finish(self, data: bytes | None = None, timeout_s: float | None = None):
        """Send its settings (unless `give` did) and wait for its end; what `start` returned (a
        SandboxRun, say). What `hold` took is let go at the end. `timeout_s`: killed if it has not
        ended that long from now (`overran` says so)."""
        try:
            if data is not None:
                self.give(data)
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self.overran = True
                self._input.kill()
                self._thread.join()
        finally:
            self._held.close()
        self._done = True
        if self._error is not None:
            raise self._error
        return self._outcome

    def waiting(self) -> bool:
        """Still waiting for its settings: neither sent, cancelled, nor ended on its own."""
        return not self._done and not self._input.given() and self._thread.is_alive() and self._input.alive()

    def cancel(self) -> None:
        """Not needed after all: it ends without its settings, or is killed when it had them. Safe to
        call more than once."""
        if not self._done:
            if self._input.given() and not self._input.cancelled:
                self._input.kill()
            else:
                self._input.cancel()
            self._thread.join()
            self._held.close()
            self._done = True


def cancel_all(*processes: StartedAhead | None) -> None:
    for process in processes:
        if process is not None:
            process.cancel()


