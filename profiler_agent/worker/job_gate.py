"""Whether this worker takes jobs now: the site may close it (drain) or pause it (a refused start).

The RQ worker reads it before each dequeue; the heartbeat thread (in the worker) and the judge job
(in the work-horse RQ forks for each job) write it. It lives in an anonymous shared memory page
made before any fork, so a horse's write is seen by its worker, without locks (a lock held by the
heartbeat thread at fork time would stay held in the horse forever).
"""

from __future__ import annotations

import mmap
import struct
import time

_LAYOUT = struct.Struct("=?d")  # closed by the site; paused until (time.time())
_WHY_AT, _WHY_BYTES = 64, 400


class JobGate:
    def __init__(self):
        self._page = mmap.mmap(-1, mmap.PAGESIZE)  # MAP_SHARED | MAP_ANONYMOUS: shared across fork

    def _state(self) -> tuple[bool, float]:
        return _LAYOUT.unpack_from(self._page, 0)

    def _set(self, closed: bool, paused_until: float, why: str | None) -> None:
        if why is not None:
            data = why.encode()[:_WHY_BYTES]
            self._page[_WHY_AT:_WHY_AT + _WHY_BYTES + 2] = len(data).to_bytes(2, "little") + data.ljust(_WHY_BYTES, b"\0")
        _LAYOUT.pack_into(self._page, 0, closed, paused_until)

    def accepting(self) -> bool:
        closed, paused_until = self._state()
        return not closed and time.time() >= paused_until

    def why(self) -> str:
        size = int.from_bytes(self._page[_WHY_AT:_WHY_AT + 2], "little")
        return self._page[_WHY_AT + 2:_WHY_AT + 2 + size].decode(errors="replace")

    def set_accepting(self, accept: bool, why: str = "") -> bool:
        """What a heartbeat answered; keeps a pause running. Returns whether this changed the gate."""
        closed, paused_until = self._state()
        if closed == (not accept):
            return False
        self._set(not accept, paused_until, why if not accept else None)
        return True

    def close(self, why: str) -> None:
        """Until a heartbeat says to accept again (a drain)."""
        self._set(True, self._state()[1], why)

    def pause(self, seconds: float, why: str) -> None:
        closed, paused_until = self._state()
        self._set(closed, max(paused_until, time.time() + seconds), why)


_installed: list[JobGate] = []


def install(gate: JobGate) -> None:
    _installed[:] = [gate]


def current() -> JobGate:
    """The worker's gate; a fresh open one where none was installed (a plain `rq worker`)."""
    if not _installed:
        _installed.append(JobGate())
    return _installed[0]


def apply_site_answer(gate: JobGate, answer: dict) -> None:
    """A start refusal's `{"accept_jobs": false, "why", "retry_after_s"}`: pause for retry_after_s,
    or close until a heartbeat reopens."""
    if answer.get("accept_jobs") is not False:
        return
    why = str(answer.get("why") or answer.get("detail") or "refused by the site")
    pause = answer.get("retry_after_s")
    if isinstance(pause, (int, float)) and not isinstance(pause, bool) and pause > 0:
        gate.pause(float(pause), why)
    else:
        gate.close(why)
