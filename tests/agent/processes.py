"""Whether processes a test started are still alive (no pytest import: test_cgroup.py runs as a
plain script on GPU hosts too)."""

import time


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, patience_s: float = 5.0) -> list[int]:
    """The pids still alive after up to `patience_s`."""
    deadline = time.monotonic() + patience_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def process_table() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, command line)} of every process now."""
    import os

    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    found[int(entry)] = (parent, f.read().replace(b"\0", b" ").decode(errors="replace").strip())
            except (OSError, ValueError, IndexError):
                pass  # gone meanwhile
    return found


def descendants(root: int, table: dict[int, tuple[int, str]]) -> set[int]:
    """The pids below `root` in the table (process_table)."""
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, (parent, _) in table.items() if parent in frontier} - found
        found |= frontier
    return found
