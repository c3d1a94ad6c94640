"""scripts/lib.sh, which platform.sh and test.sh source, run by bash as they run it (set -euo pipefail)."""
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_started_stops_every_process_even_when_one_is_already_gone(tmp_path):
    """The walk of issue 12: after Ctrl-C, gunicorn had already quit, so `kill` of its pid failed, set -e
    ended the EXIT trap there, and the sweeper (which ignores SIGINT, as every `&` command of a
    non-interactive shell does) kept running with nothing left to stop it."""
    pid_file = tmp_path / "pid"
    script = f"""
set -euo pipefail
source {ROOT}/scripts/lib.sh
STARTED_PIDS=()
trap stop_started EXIT
true & STARTED_PIDS+=($!)                 # gone before the stop, like gunicorn after Ctrl-C
sleep 300 & STARTED_PIDS+=($!)            # ignores SIGINT, like the sweeper
echo $! > {pid_file}
sleep 0.5
exit 130
"""
    started = time.monotonic()
    subprocess.run(["bash", "-c", script], timeout=60, check=False)
    survivor = int(pid_file.read_text())
    try:
        assert not alive(survivor), "a process platform.sh started outlived it"
        assert time.monotonic() - started < 20
    finally:
        if alive(survivor):
            os.kill(survivor, 9)
