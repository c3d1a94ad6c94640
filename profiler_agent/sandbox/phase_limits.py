"""The phases of a judged run as the parent sees them: the messages the child sends on its result pipe
(profiler_agent.sandbox.child_channel), and the clock and memory limit in force in each phase.

A run with a compile limit starts in the build phase (importing the candidate, where load_inline
builds). "compiled" ends it: the run limits apply from then on. A build started later, from the
model's `__init__` or its first `forward` (a lazy load_inline), is build time too: "build" ... "built"
put the run back under the compile limits for its duration, and its time comes out of the compile
budget, not the run's. "stage NAME" names what the child is doing, for messages.

Whatever runs in the child can write these messages too. It gains no more than the limits an
organizer set for builds: the compile budget is shared by every build of the run, so a run lives at
most compile + run limits whoever sends them, and no phase is ever unlimited.
"""

from __future__ import annotations

import time

from profiler_agent.sandbox.child_channel import MESSAGE_END, MESSAGE_START, MAX_MESSAGE_BYTES

# What the child is doing, in words (memory-limit messages)
STAGE_WORDS = {
    "load_reference": "importing the reference",
    "load_candidate": "importing the candidate",
    "build_models": "constructing the models, in __init__",
    "correctness": "running the correctness trials, in forward",
    "timing": "timing the models, in forward",
    "kernel_census": "profiling one call of each model, in forward",
}


class MessageSplitter:
    """Cuts the phase messages out of the pipe's bytes; the rest is the report. A message split
    across two reads is held back until its end arrives."""

    def __init__(self):
        self.pending = b""

    def feed(self, chunk: bytes) -> tuple[bytes, list[str]]:
        data, messages = [], []
        buffer = self.pending + chunk
        while True:
            start = buffer.find(MESSAGE_START)
            if start < 0:
                data.append(buffer)
                buffer = b""
                break
            data.append(buffer[:start])
            buffer = buffer[start:]
            end = buffer.find(MESSAGE_END)
            if end < 0:
                if len(buffer) > MAX_MESSAGE_BYTES:  # not a message: drop the marker
                    buffer = buffer[1:]
                    continue
                break
            messages.append(buffer[1:end].decode("ascii", "replace"))
            buffer = buffer[end + 1:]
        self.pending = buffer
        return b"".join(data), messages


class Clock:
    """The run's deadline and the limits in force. Without a compile limit: start + timeout and one
    memory limit. With one: the build phase until "compiled" (compile limit), then the run limit,
    paused while a later build runs under what is left of the compile budget."""

    def __init__(self, started: float, run_s: float, compile_s: float | None,
                 memory_bytes: int | None = None, compile_memory_bytes: int | None = None):
        self.started, self.run_s, self.compile_s = started, run_s, compile_s
        self.memory_bytes, self.compile_memory_bytes = memory_bytes, compile_memory_bytes
        self.compiled_at: float | None = None
        self.build_started: float | None = None  # a build after "compiled", while it runs
        self.later_builds_s = 0.0  # finished builds after "compiled"
        self.stage = "load_candidate" if compile_s is not None else ""  # unphased: the self-test, the verifier
        self.build_stage: str | None = None  # the stage a later build started in

    @property
    def phased(self) -> bool:
        return self.compile_s is not None

    def in_compile_phase(self) -> bool:
        return self.phased and (self.compiled_at is None or self.build_started is not None)

    def compile_used_s(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        if self.compiled_at is None:
            return now - self.started
        running = now - self.build_started if self.build_started is not None else 0.0
        return (self.compiled_at - self.started) + self.later_builds_s + running

    def deadline(self) -> float:
        if not self.phased:
            return self.started + self.run_s
        if self.compiled_at is None:
            return self.started + self.compile_s
        if self.build_started is not None:
            return self.build_started + self.compile_s - self.compile_used_s(self.build_started)
        return self.compiled_at + self.later_builds_s + self.run_s

    def limit_s(self) -> float:
        return self.compile_s if self.in_compile_phase() else self.run_s

    def memory_limit(self) -> int | None:
        return self.compile_memory_bytes if self.in_compile_phase() else self.memory_bytes

    def phase_words(self) -> str:
        """Where the run is, for a message: "while importing the candidate (build phase)"."""
        if not self.phased:
            return f"while {STAGE_WORDS.get(self.stage, 'running')}"
        if self.compiled_at is None:
            return f"while {STAGE_WORDS.get(self.stage, 'importing the candidate')} (build phase)"
        if self.build_started is not None:
            within = STAGE_WORDS.get(self.build_stage or "", "running the candidate")
            return f"while building an extension, {within} (build phase)"
        return f"while {STAGE_WORDS.get(self.stage, 'running the candidate')} (run phase)"

    def on_message(self, message: str) -> bool:
        """Apply one message; True when the limits in force changed."""
        now = time.monotonic()
        if not self.phased:
            if message.startswith("stage "):
                self.stage = message[6:]
            return False
        if message == "compiled" and self.compiled_at is None:
            self.compiled_at = now  # only the first counts
            return True
        if message == "build" and self.compiled_at is not None and self.build_started is None:
            self.build_started, self.build_stage = now, self.stage
            return True
        if message == "built" and self.build_started is not None:
            self.later_builds_s += now - self.build_started
            self.build_started = None
            return True
        if message.startswith("stage ") and message[6:] in STAGE_WORDS:
            self.stage = message[6:]
        return False
