"""Extracting an untrusted zip: no path escapes, no links, bounded size."""

from __future__ import annotations

import stat
from pathlib import Path, PurePosixPath

from profiler_agent.bundles.zip_members import iter_member, member_name, open_zip

MAX_MEMBERS = 2000
MAX_TOTAL_BYTES = 256 * 1024 * 1024


def _safe_member_path(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise ValueError(f"unsafe path in zip: {name!r}")
    return path


def extract_zip(zip_path: Path, target: Path) -> None:
    """Extract `zip_path` into `target`, refusing anything that could write outside it. Members are
    inflated through a counting reader: a header that lies about a size stops it, never fills memory
    or disk (zip_members raises a ValueError naming the member)."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    with open_zip(zip_path) as archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"zip has {len(members)} entries, more than {MAX_MEMBERS}")
        if sum(m.file_size for m in members) > MAX_TOTAL_BYTES:
            raise ValueError(f"zip expands to more than {MAX_TOTAL_BYTES} bytes")
        written = 0
        for member in members:
            name = member_name(member)
            relative = _safe_member_path(name)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise ValueError(f"symbolic link in zip: {name!r}")
            destination = target.joinpath(*relative.parts)
            if member.is_dir():
                destination.mkdir(parents=True, exist_ok=True)
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            with open(destination, "wb") as sink:
                for chunk in iter_member(archive, member, MAX_TOTAL_BYTES - written):
                    sink.write(chunk)
                    written += len(chunk)
