"""bench/fleet/two_gpus.py on its smallest run without GPUs (correctness, never timing): the real site on
SQLite, Redis, gunicorn, the sweeper and `profiler_agent fleet` with CPU workers, one worker in phase
alone and two in phase both; every run is judged by a named worker of the fleet and the report comes out."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_fleet_bench_judges_every_submission_with_one_then_two_workers_and_reports(tmp_path):
    redis_server = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0").rsplit("/", 1)[0]
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "bench/fleet/two_gpus.py", "--cpu-workers", "2", "--alone", "1", "--both", "4",
                           "--same-both", "2", "--deadline", "300", "--out", str(out), "--workdir", str(tmp_path / "work"),
                           "--redis-url", f"{redis_server}/11"],
                          cwd=ROOT, timeout=400, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "two_gpus.json").read_text())
    alone, both = report["phases"]["alone"], report["phases"]["both"]
    assert (alone["judged"], both["judged"]) == (1, 4) and alone["unjudged"] == both["unjudged"] == 0
    assert alone["verdicts"] == {"passed": 1} and both["verdicts"] == {"passed": 4}
    assert sorted(alone["workers"]) == ["fleet-cpu0"] and sorted(both["workers"]) == ["fleet-cpu0", "fleet-cpu1"]
    assert {row["worker"] for row in report["runs"]["alone"]} == {"fleet-cpu0"}
    assert {row["worker"] for row in report["runs"]["both"]} <= {"fleet-cpu0", "fleet-cpu1"}
    assert report["uuid_check"] == {"checked": 5, "mismatches": 0, "details": []}
    same = report["interference"]
    assert same["bundle"] == "dispatch-cpu" and same["alone_gpu0"]["runs"] == 1
    assert sum(b["runs"] for b in same["both"].values()) == 4
    assert alone["per_minute"] > 0 and both["per_minute"] > 0
    with open(out / "two_gpus_nvml.csv") as handle:
        assert next(csv.reader(handle))[:3] == ["t", "phase", "gpu"]  # no GPU here: the header alone
    assert "===== site.log" in (out / "two_gpus.log").read_text()
    assert "| both | fleet-cpu0, fleet-cpu1 | 4 | 4 |" in done.stdout
