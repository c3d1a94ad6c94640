"""SQLite, the embedded default, holds a burst of concurrent uploads through the API while an organizer
downloads the audit CSV over a slow link (a streamed export: its query stays open, a long reader).
bench/site/uploads.py, reduced: the real gunicorn of scripts/platform.sh on its own SQLite file.
In the rollback journal the open read held every writer off until the busy timeout answered 500
"database is locked"; in WAL readers and the writer do not wait for each other."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_a_burst_of_uploads_during_a_slow_export_gets_no_server_error_on_sqlite(tmp_path):
    out = tmp_path / "uploads.json"
    completed = subprocess.run(
        [sys.executable, "bench/site/uploads.py", "--uploads", "48", "--contestants", "12", "--concurrency", "12",
         "--slow-export", "--hold-max", "25", "--workdir", str(tmp_path / "run"), "--out", str(out),
         "--database-url", f"sqlite:///{tmp_path / 'run' / 'site.sqlite3'}"],
        cwd=ROOT, env={**os.environ}, capture_output=True, text=True, timeout=280)
    assert out.exists(), completed.stdout[-3000:] + completed.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["statuses"] == {"201": 48}, report
    assert report["database"] == "sqlite" and report["journal_mode"] == "wal", report
    assert report["server_errors"] == 0 and report["database_locked_in_log"] == 0, report
    # nothing lost, nothing stored unanswered: one run each on the season's one GPU type
    assert (report["stored_submissions"], report["lost"], report["unanswered_but_stored"], report["runs"]) == (48, 0, 0, 48)
    # the export was held open while the uploads ran, then read whole (10,000 rows of 2 KB)
    assert report["slow_export"]["bytes"] > 20_000_000, report["slow_export"]
