"""One progress line on stderr: i/N, the sample being judged, time spent and an estimate of the time
left (the mean time per sample judged so far in this run, times the samples left). Where stderr is not
a terminal, a plain line per sample instead."""

from __future__ import annotations

import sys
import time

WIDTH = 24


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    def __init__(self, total: int, done: int = 0, stream=None, now=time.monotonic):
        self.total, self.done, self.stream, self.now = total, done, stream or sys.stderr, now
        self.started = now()
        self.judged = 0  # in this run: the estimate leaves out samples taken from the state file
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def eta(self) -> float | None:
        if not self.judged:
            return None
        return (self.now() - self.started) / self.judged * (self.total - self.done)

    def line(self, sample_id: str) -> str:
        filled = WIDTH * self.done // self.total if self.total else WIDTH
        bar = "#" * filled + "." * (WIDTH - filled)
        return (f"[{bar}] {self.done + 1}/{self.total} {sample_id}  elapsed {clock(self.now() - self.started)}"
                f"  left ~{clock(self.eta())}")

    def start(self, sample_id: str) -> None:
        text = self.line(sample_id)
        if self.tty:
            self.stream.write("\r\x1b[K" + text)
        else:
            self.stream.write(f"bench {text}\n")
        self.stream.flush()

    def finish(self) -> None:
        self.done += 1
        self.judged += 1

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
