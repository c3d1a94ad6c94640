"""Concurrent uploads through the contestants' API, against the site as scripts/platform.sh runs it.

    python bench/site/uploads.py [--uploads 200] [--contestants 40] [--concurrency 16] [--database-url URL]

Starts gunicorn with deploy/gunicorn.conf.py (its default workers and threads, ALLOWED_HOSTS as
platform.sh sets it) on a fresh database (default: SQLite at var/bench-upload.sqlite3, the embedded
default; a PostgreSQL URL gets a fresh database of that name), makes --contestants contestants with
an API token and an issue each, then sends --uploads bundle uploads (bench/fixtures/bundles/dispatch-cpu, each
made unique) from them, --concurrency at a time, and counts the answers by status. Afterwards it
checks that every 201 is a stored submission with its runs (nothing lost, nothing extra), and
counts "database is locked" in the site's log. Runs go to Redis (a queue prefix of the bench's own,
removed afterwards); no agent judges them. Prints a summary and writes it as JSON (--out).

--slow-export: meanwhile an organizer downloads the audit trail's CSV (a streamed response, some
20 MB) and reads only its first bytes until the uploads are done (or --hold-max seconds), as a slow
link would: the export's query stays open all that time, a long reader of the database.
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from live_platform.gunicorn_site import GunicornSite  # noqa: E402

BUNDLE = ROOT / "bench" / "fixtures" / "bundles" / "dispatch-cpu"
PLATFORM_ALLOWED_HOSTS = "localhost,127.0.0.1,[::1]"  # what scripts/platform.sh exports


def percentile(values, fraction):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))]


def fresh_database(url):
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///"):])
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')


ORGANIZER_PASSWORD = "bench-organizer-password-7"


def prepare(env, n_contestants, audit_rows=0):
    """Migrate, then a season judged on `cpu` and the contestants, each with a token and an issue; with
    `audit_rows`, an organizer and that many audit entries of 2 KB each (for the slow export)."""
    import subprocess

    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "REDIS_URL", "SITE_REDIS_URL", "GPU_QUEUE_PREFIX",
                                           "SITE_QUEUE_NAME")})
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.db import connection

    from submissions.models import GpuType, Season
    from submissions.services import accounts, submitting

    season = Season.objects.create(code="S1", name="Upload bench")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    contestants = []
    for i in range(n_contestants):
        contestant = accounts.register_contestant(f"bench{i}", None, display_name=f"Bench {i}")
        issue = submitting.open_issue(season, contestant, title=f"ReLU {i}", operator="torch.relu")
        contestants.append((accounts.create_api_token(contestant)[1], issue.code))
    if audit_rows:
        from submissions.models import AuditEntry

        accounts.register_contestant("organizer", ORGANIZER_PASSWORD, display_name="Organizer", is_staff=True)
        AuditEntry.objects.bulk_create(
            [AuditEntry(actor_label="bench", action="bench.filler", object_type="bench", object_id=str(i),
                        reason="x" * 2048) for i in range(audit_rows)], batch_size=1000)
    connection.close()  # nothing of the bench's own holds the database while the site works
    return contestants


def upload(site, token, issue, index):
    import requests

    files = []
    for name in ("torchcode.py", "cudacode.py"):
        data = (BUNDLE / name).read_bytes()
        if name == "cudacode.py":
            data += f"\n# upload {index} {uuid.uuid4().hex}\n".encode()
        files.append(("files", (name, data)))
    started = time.perf_counter()
    try:
        response = requests.post(f"{site}/api/v1/submissions", data={"issue": issue}, files=files,
                                 headers={"Authorization": f"Bearer {token}"}, timeout=120)
    except requests.RequestException as exc:
        return {"status": f"error: {type(exc).__name__}", "ms": (time.perf_counter() - started) * 1000, "body": str(exc)}
    ms = (time.perf_counter() - started) * 1000
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    return {"status": response.status_code, "ms": ms, "id": body.get("id"),
            "body": "" if response.status_code == 201 else response.text[:300]}


class SlowExport:
    """An organizer's download of the audit CSV that reads its first bytes, then nothing until the
    uploads are done or `hold_max_s` has passed; then it reads the rest."""

    def __init__(self, site, hold_max_s):
        import requests

        self.session = requests.Session()
        login = f"{site}/accounts/login/"
        self.session.get(login, timeout=30)
        answer = self.session.post(login, timeout=30, headers={"Referer": login}, allow_redirects=False, data={
            "username": "organizer", "password": ORGANIZER_PASSWORD,
            "csrfmiddlewaretoken": self.session.cookies["csrftoken"]})
        assert answer.status_code == 302, f"organizer login failed: {answer.status_code}"
        self.response = self.session.get(f"{site}/organizer/export/audit.csv", stream=True, timeout=300)
        assert self.response.status_code == 200, self.response.status_code
        self.chunks = self.response.iter_content(1 << 16)
        self.size = len(next(self.chunks))
        self.opened = time.perf_counter()
        self.uploads_done = threading.Event()
        self.thread = threading.Thread(target=self._hold_then_read, args=(hold_max_s,), daemon=True)
        self.thread.start()

    def _hold_then_read(self, hold_max_s):
        self.uploads_done.wait(hold_max_s)
        self.held_s = time.perf_counter() - self.opened
        self.size += sum(len(chunk) for chunk in self.chunks)
        self.response.close()
        self.session.close()

    def finish(self):
        self.uploads_done.set()
        self.thread.join()
        return {"held_s": round(self.held_s, 2), "bytes": self.size}


def run(uploads=200, n_contestants=40, concurrency=16, database_url=None, redis_url=None, workdir=None,
        slow_export=False, hold_max_s=600):
    workdir = Path(workdir or ROOT / "var" / "bench-upload")
    workdir.mkdir(parents=True, exist_ok=True)
    database_url = database_url or f"sqlite:///{workdir / 'bench-upload.sqlite3'}"
    redis_url = redis_url or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    tag = f"upload-bench-{uuid.uuid4().hex[:8]}"
    base, number = redis_url.rsplit("/", 1)
    env = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url,
               SITE_REDIS_URL=os.environ.get("SITE_REDIS_URL", f"{base}/{int(number or 0) + 1}"),
               GPU_QUEUE_PREFIX=f"{tag}.gpu.", SITE_QUEUE_NAME=f"{tag}.site", ALLOWED_HOSTS=PLATFORM_ALLOWED_HOSTS,
               SUBMISSIONS_PER_HOUR="100000", SUBMISSIONS_PER_DAY="100000",
               GUNICORN_ACCESS_LOG=str(workdir / "access.log"))
    fresh_database(database_url)
    contestants = prepare(env, n_contestants, audit_rows=10_000 if slow_export else 0)
    site = GunicornSite(workdir / "site.log", env=env)
    export = None
    try:
        site.start()
        export = SlowExport(site.url, hold_max_s) if slow_export else None
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda i: upload(site.url, *contestants[i % n_contestants], i), range(uploads)))
        wall_s = time.perf_counter() - started
        export_held = export.finish() if export else None
    finally:
        site.stop()
        from submissions import queueing

        for connection in (queueing.connection(), queueing.site_connection()):
            for key in connection.scan_iter(f"*{tag}*"):
                connection.delete(key)
    from django.db import connection

    from submissions.models import Run, Submission

    created = {r["id"] for r in results if r["status"] == 201}
    stored = set(Submission.objects.values_list("pk", flat=True))
    runs = Run.objects.filter(submission_id__in=stored).count()
    journal = None
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            journal = cursor.execute("PRAGMA journal_mode").fetchone()[0]
    log_text = (workdir / "site.log").read_text(errors="replace")
    latencies = [r["ms"] for r in results]
    return {
        "database": connection.vendor, "journal_mode": journal, "uploads": uploads, "contestants": n_contestants,
        "concurrency": concurrency, "statuses": dict(Counter(str(r["status"]) for r in results)),
        "server_errors": sum(1 for r in results if not isinstance(r["status"], int) or r["status"] >= 500),
        "database_locked_in_log": log_text.count("database is locked"),
        "stored_submissions": len(stored), "answered_201": len(created), "lost": len(created - stored),
        "unanswered_but_stored": len(stored - created), "runs": runs,
        "wall_s": round(wall_s, 2), "uploads_per_s": round(uploads / wall_s, 1),
        "latency_ms": {"p50": round(statistics.median(latencies), 1), "p95": round(percentile(latencies, 0.95), 1),
                       "p99": round(percentile(latencies, 0.99), 1), "max": round(max(latencies), 1)},
        "failures": [r["body"] for r in results if r["status"] != 201][:5],
        "slow_export": export_held,
        "load_average": os.getloadavg(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--contestants", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--database-url", default=None, help="default: SQLite in --workdir")
    parser.add_argument("--redis-url", default=None, help="default: REDIS_URL")
    parser.add_argument("--workdir", default=None, help="default: var/bench-upload")
    parser.add_argument("--slow-export", action="store_true",
                        help="an organizer downloads the audit CSV slowly while the uploads run (a long reader)")
    parser.add_argument("--hold-max", type=float, default=600,
                        help="the slow download reads the rest after this many seconds, uploads done or not")
    parser.add_argument("--out", default=None, help="the summary as JSON (default bench/results/uploads/<database>"
                        "[-<journal>][-slow-export].json)")
    args = parser.parse_args()
    report = run(args.uploads, args.contestants, args.concurrency, args.database_url, args.redis_url, args.workdir,
                 args.slow_export, args.hold_max)
    text = json.dumps(report, indent=2)
    print(text)
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / "uploads" / f"{record_name(report, args.slow_export)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")


def record_name(report, slow_export):
    """postgresql, sqlite-wal or sqlite-rollback-journal, and -slow-export with a long reader."""
    name = report["database"]
    if name == "sqlite":
        name += "-wal" if report["journal_mode"] == "wal" else "-rollback-journal"
    return name + ("-slow-export" if slow_export else "")


if __name__ == "__main__":
    main()
