"""bench/site/leaderboard.py runs against the site as scripts/platform.sh configures it (its
ALLOWED_HOSTS, its gunicorn), on a small season: every page it times answers 200, deep pages included;
its figures are written as JSON with the load average they were measured at."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_leaderboard_bench_runs_with_the_platforms_allowed_hosts(tmp_path):
    env = dict(os.environ, ALLOWED_HOSTS="localhost,127.0.0.1,[::1]")  # as scripts/platform.sh exports it
    completed = subprocess.run(
        [sys.executable, "bench/site/leaderboard.py", "--contestants", "120", "--submissions", "400",
         "--requests", "3", "--review-every", "0.5", "--database-url", f"sqlite:///{tmp_path / 'bench.sqlite3'}",
         "--out", str(tmp_path / "churn-sqlite.json")],  # never over the repository's own figures
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    timed = re.findall(r"^(.+?)\s+p50\s+[\d.]+ ms\s+p99\s+[\d.]+ ms", completed.stdout, re.M)
    assert [label.strip() for label in timed] == [
        "leaderboard page 1", "leaderboard page 2", "leaderboard page 3", "fragment page 3", "JSON offset 0",
        "JSON offset 100", "home", "every request"], completed.stdout
    record = json.loads((tmp_path / "churn-sqlite.json").read_text())
    assert record["database"] == "sqlite" and len(record["load_average_before"]) == 3
    assert set(record["figures"]) == {label.strip() for label in timed[:-1]}
    every = [ms for page in record["figures"].values() for ms in (page["p50"], page["p99"], page["max"])]
    assert min(every) <= record["every_request"]["p99"] <= record["every_request"]["max"] == max(every)
    assert record["worst_p99_ms"] == max(f["p99"] for f in record["figures"].values())
