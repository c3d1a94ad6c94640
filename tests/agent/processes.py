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
