"""Reading logs a submission wrote, capped to their head and tail."""

from __future__ import annotations

import os
from pathlib import Path

LOG_CAP_BYTES = 64 * 1024


def cap_bytes(data: bytes, limit: int = LOG_CAP_BYTES) -> str:
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace")
    half = limit // 2
    omitted = len(data) - 2 * half
    return (
        data[:half].decode("utf-8", errors="replace")
        + f"\n[... {omitted} bytes omitted ...]\n"
        + data[-half:].decode("utf-8", errors="replace")
    )


def read_capped(path: Path, limit: int = LOG_CAP_BYTES) -> str:
    """The file's text, or its first and last limit/2 bytes; never reads the whole of a huge file."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return ""
    with open(path, "rb") as f:
        if size <= limit:
            return cap_bytes(f.read(), limit)
        half = limit // 2
        head = f.read(half)
        f.seek(size - half)
        tail = f.read(half)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[... {size - 2 * half} bytes omitted ...]\n"
        + tail.decode("utf-8", errors="replace")
    )
