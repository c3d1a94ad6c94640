"""Ctrl-C of `scripts/platform.sh` while its agent judges a run: the agent finishes that run and the
site records its verdict before either stops, and nothing the script started is left running.

    python bench/fleet/ctrl_c_stop.py [--second-ctrl-c]

Starts the platform as the README does (on a database of its own, a free port, and by default a Redis
that platform.sh starts itself, as where none answers: its queues are then no one else's),
waits for the demo's first run to be judged (status running), sends SIGINT to the script's process
group as a terminal's Ctrl-C does, and prints each run's status and verdict after the stop, the stop's
seconds, and the processes left. With --second-ctrl-c, a second SIGINT 3 s after the first: the agent
stops at once and the run stays unfinished, to be judged again at the next start.
"""

from __future__ import annotations

import argparse
import os
import signal
import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from live_platform.ports import free_port  # noqa: E402


def runs(db: Path) -> list[tuple]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            return connection.execute("SELECT id, status, stage, verdict FROM submissions_run ORDER BY id").fetchall()
    except sqlite3.Error:
        return []


def descendants(root: int) -> dict[int, str]:
    """Every process below `root` (those in sessions of their own too), pid -> command line."""
    parent_of, command_of = {}, {}
    for line in subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout.splitlines()[1:]:
        pid, ppid, *args = line.split(None, 2)
        parent_of[int(pid)], command_of[int(pid)] = int(ppid), args[0] if args else ""
    found, frontier = {}, {root}
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier and pid not in found}
        found.update({pid: command_of[pid] for pid in frontier})
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--second-ctrl-c", action="store_true")
    parser.add_argument("--out", type=Path, help="the record as JSON (default bench/results/ctrl-c-stop/"
                        "one-ctrl-c.json, two-ctrl-c.json with --second-ctrl-c)")
    parser.add_argument("--redis-url", default="",
                        help="a Redis to use (database 0); by default none answers, so platform.sh starts its own")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="platform-stop-"))
    db, port = work / "db.sqlite3", free_port()
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{db}", PORT=str(port),
               REDIS_URL=args.redis_url or f"redis://127.0.0.1:{free_port()}/0")
    log = open(work / "platform.log", "w")
    script = subprocess.Popen(["bash", "scripts/platform.sh"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)  # its own group: the SIGINT below is a terminal's Ctrl-C
    started = time.monotonic()
    while time.monotonic() - started < 600 and not any(run[1] == "running" for run in runs(db)):
        if script.poll() is not None:
            sys.exit(f"platform.sh ended ({script.returncode}) before a run was judged: see {work / 'platform.log'}")
        time.sleep(0.5)
    print(f"a run is being judged {time.monotonic() - started:.0f} s after the start: {runs(db)}", flush=True)
    started_here = descendants(script.pid)
    os.killpg(script.pid, signal.SIGINT)
    stopping = time.monotonic()
    if args.second_ctrl_c:
        threading.Timer(3.0, lambda: os.killpg(script.pid, signal.SIGINT)).start()
    script.wait(timeout=300)
    stop_s = time.monotonic() - stopping
    print(f"platform.sh ended ({script.returncode}) {stop_s:.1f} s after Ctrl-C", flush=True)
    after = runs(db)
    for run_id, status, stage, verdict in after:
        print(f"  run {run_id}: status {status}, stage {stage or '-'}, verdict {verdict or '-'}")
    time.sleep(2)
    left = [f"{pid} {command}" for pid, command in started_here.items() if alive(pid)]
    print(f"of the {len(started_here)} processes below the script, left running: {len(left)}"
          + "".join(f"\n  {line[:160]}" for line in left))
    log.close()
    print(f"the script's output: {work / 'platform.log'}")
    out = args.out or ROOT / "bench" / "results" / "ctrl-c-stop" / f"{'two' if args.second_ctrl_c else 'one'}-ctrl-c.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": " ".join(["python bench/fleet/ctrl_c_stop.py", *sys.argv[1:]]), "exit_status": script.returncode,
        "stop_s": round(stop_s, 1), "runs": [dict(zip(("id", "status", "stage", "verdict"), run)) for run in after],
        "processes_started": len(started_here), "left_running": left}, indent=1) + "\n")
    print(f"record: {out}")


if __name__ == "__main__":
    main()
