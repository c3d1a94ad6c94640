"""Builds wherever they happen in the judged process. A bundle may call load_inline (or load) in its
model's constructor or its first forward instead of at import; such a build is compile time all the
same: torch.utils.cpp_extension._jit_compile, through which both build, is wrapped so that a build
after the import tells the parent ("build" ... "built": the compile limits apply meanwhile), writes its
output to the compile log, and has its seconds added to the compile time (and taken out of the phase
it happened in).

Not seen: a build the bundle runs by itself (nvcc in a subprocess), Triton's and CuPy's own JIT
compiles at a first call; those stay in the phase they happen in.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time

from profiler_agent.sandbox import child_channel


@contextlib.contextmanager
def fd_output_to(path: str):
    """Send fds 1 and 2 to `path`: build tools (ninja, nvcc) write there directly, not via sys.stdout."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(target, 1)
    os.dup2(target, 2)
    os.close(target)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


class BuildWatch:
    """Wraps torch's extension builder for the life of the judged process."""

    def __init__(self, result_fd: int, compile_log: str):
        self.result_fd, self.compile_log = result_fd, compile_log
        self.imported = False  # set once the candidate's import (the build phase) is over
        self.later_builds_s = 0.0  # builds after the import, all together
        self.later_builds = 0
        self._depth = 0

    def install(self) -> None:
        from torch.utils import cpp_extension

        original = cpp_extension._jit_compile
        if getattr(original, "_profiler_agent_watched", False):
            return

        @functools.wraps(original)
        def watched(*args, **kwargs):
            if not self.imported or self._depth:
                return original(*args, **kwargs)  # the import's build is compile time already
            return self._later_build(original, args, kwargs)

        watched._profiler_agent_watched = True
        cpp_extension._jit_compile = watched

    def _later_build(self, original, args, kwargs):
        self._depth += 1
        child_channel.send_phase(self.result_fd, "build")
        started = time.perf_counter()
        try:
            with fd_output_to(self.compile_log):
                print(f"[profiler_agent] a build started after the import (#{self.later_builds + 1}): "
                      "counted as compile time", flush=True)
                return original(*args, **kwargs)
        finally:
            self.later_builds_s += time.perf_counter() - started
            self.later_builds += 1
            self._depth -= 1
            child_channel.send_phase(self.result_fd, "built")

