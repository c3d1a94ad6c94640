"""How the harness's processes talk to the parent: settings on stdin (read, then stdin is closed
before any submission code loads), a JSON report on a pipe fd."""

from __future__ import annotations

import json
import math
import os
import sys


def read_settings() -> dict:
    """Settings from stdin, then stdin becomes /dev/null so submission code finds nothing there."""
    settings = json.loads(sys.stdin.buffer.read() or b"{}")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return settings


def finite(value):
    """JSON has no NaN or inf: unmeasurable numbers become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


# Sent once, ahead of the report, when importing the candidate (its build) is done: the parent then
# switches from the compile limits to the run limits. JSON escapes control characters, so the record
# separator that starts it never occurs in a report.
PHASE_COMPILED = b"\x1ecompiled\n"


def send_phase_compiled(fd: int) -> None:
    os.write(fd, PHASE_COMPILED)


def send_report(fd: int, report: dict) -> None:
    data = json.dumps(finite(report), allow_nan=False).encode()
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)
