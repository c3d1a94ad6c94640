"""bench/fleet/dispatch.py's machinery on its smallest run (correctness, never timing): the real site,
Redis and one real CPU agent; every judging's timeline, pieced together from the site's rows, RQ's
job hash and the agent job's marks, comes out complete and in order."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMELINE = ["created", "run_row", "rq_enqueued", "rq_started", "job_begun", "site_started", "agent_started",
            "downloaded", "judged", "site_finished", "reported", "rq_ended"]


def test_the_dispatch_bench_pieces_together_an_ordered_timeline_of_each_judging(tmp_path):
    database = os.environ.get("DATABASE_URL", "")  # its site runs on PostgreSQL when that names it
    bench_database = (database.rsplit("/", 1)[0] + "/gpucf_bench_dispatch_test" if database.startswith("postgres")
                      else f"sqlite:///{tmp_path / 'bench.sqlite3'}")
    redis_server = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0").rsplit("/", 1)[0]
    out = tmp_path / "out"
    subprocess.run([sys.executable, "bench/fleet/dispatch.py", "--latency", "2", "--agents", "1", "--batch", "1",
                    "--out", str(out), "--database-url", bench_database, "--redis-url", f"{redis_server}/8"],
                   cwd=ROOT, check=True, timeout=540)
    report = json.loads((out / "dispatch.json").read_text())
    rows = report["latency"]["records"] + report["throughput"][0]["records"]
    assert len(rows) == 3 and {row["verdict"] for row in rows} == {"passed"}
    for row in rows:
        times = [row["times"][name] for name in TIMELINE]
        assert None not in times, row["times"]
        assert times == sorted(times), row["times"]
        assert 0 < row["latency_s"] == row["times"]["site_started"] - row["times"]["created"]
    assert report["throughput"][0]["per_minute"] > 0
    assert "judging: timing" in report["stages"] and "(a) submit-to-agent-start" in (out / "dispatch.md").read_text()
