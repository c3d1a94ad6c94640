"""Parsing human sizes such as 4G or 512M (powers of 1024)."""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 4G, 512M, 1048576)")
    number, unit = match.groups()
    size = int(float(number) * _UNITS[unit.upper()])
    if size <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return size


def format_size(size: int | None) -> str:
    """1073741824 -> '1 GiB', 1610612736 -> '1.5 GiB'; None -> 'unlimited'."""
    if size is None:
        return "unlimited"
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} B"
