"""An agent's heartbeat with a backlog of waiting runs (the issue measured 0.5-0.9 s with 205).

    python bench/site/heartbeat_backlog.py [--runs 200] [--heartbeats 50]

Fills a database of its own (--database-url, default SQLite at var/bench-heartbeat.sqlite3; emptied first)
with `--runs` queued runs whose jobs wait in the real Redis (REDIS_URL, queue names of this run alone),
all older than the requeue grace, so every one is a candidate of the sweep. Then times, through
Django's full request stack, heartbeats as agents send them (the sweep runs on at most one per
SWEEP_INTERVAL_SECONDS site-wide), one full sweep alone, and, for comparison, what the former sweep
did on every heartbeat: one Redis check per waiting run.
"""
import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def setup_django(database_url):
    os.environ["DATABASE_URL"] = database_url  # never DATABASE_URL from the environment: it is emptied
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["GPU_QUEUE_PREFIX"] = f"bench-{uuid.uuid4().hex[:8]}.gpu."
    import django

    django.setup()
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0) if _migrated() else None
    call_command("migrate", verbosity=0)


def _migrated():
    from django.db import connection

    return "submissions_run" in connection.introspection.table_names()


def populate(n_runs):
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from submissions.models import GpuType, Run, Season, Submission
    from submissions.services import accounts, judging, submitting

    season = Season.objects.create(code="S1", name="Bench season")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    contestant = accounts.register_contestant("bench", "pw-bench-123")
    issue = submitting.open_issue(season, contestant, title="ReLU")
    with transaction.atomic():
        submissions = Submission.objects.bulk_create(
            [Submission(issue=issue, contestant=contestant, bundle_sha256=f"{i:064x}") for i in range(n_runs)])
        for submission in submissions:
            judging.create_runs(submission)
    Run.objects.update(enqueued_at=timezone.now() - timedelta(minutes=10))
    _, token = accounts.create_agent("bench-agent", [cpu])
    return cpu, token


def time_heartbeats(token, n):
    from django.test import Client

    client = Client()
    payload = json.dumps({"name": "w0", "queues": [], "inventory": {}, "versions": {}, "judging": []})
    times = []
    for _ in range(n):
        started = time.perf_counter()
        response = client.post("/api/v1/agent/heartbeat", payload, content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {token}")
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.content
        time.sleep(0.05)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--heartbeats", type=int, default=50)
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench-heartbeat.sqlite3'}",
                        help="a database for this bench alone: it is emptied first")
    parser.add_argument("--out", type=Path, help="the report as JSON (default bench/results/heartbeat-backlog/<database>.json)")
    args = parser.parse_args(argv)
    setup_django(args.database_url)
    from django.conf import settings

    from submissions import queueing
    from submissions.models import Run
    from submissions.services import recovery

    cpu, token = populate(args.runs)
    waiting = len(queueing.judging_queue(cpu.queue_name).get_job_ids())
    time_heartbeats(token, 1)  # warm-up: imports, URL resolution, the API's schemas
    queueing.site_connection().delete(recovery.sweep_key())  # so the first timed heartbeat sweeps
    beats = time_heartbeats(token, args.heartbeats)
    started = time.perf_counter()
    touched = recovery.sweep_runs()
    sweep_s = time.perf_counter() - started
    job_ids = list(Run.objects.values_list("rq_job_id", flat=True))
    started = time.perf_counter()
    for job_id in job_ids:  # the former sweep: one check per waiting run, on every heartbeat
        queueing.is_waiting(cpu.queue_name, job_id)
    per_run_s = time.perf_counter() - started
    ms = lambda s: round(s * 1000, 1)  # noqa: E731
    beats_sorted = sorted(beats)
    report = {
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1], "waiting_jobs": waiting,
        "heartbeats": len(beats), "sweep_interval_s": settings.SWEEP_INTERVAL_SECONDS,
        "heartbeat_ms": {"median": ms(statistics.median(beats)), "p95": ms(beats_sorted[int(0.95 * len(beats)) - 1]),
                         "max": ms(max(beats)), "first (it swept)": ms(beats[0])},
        "full_sweep_ms": ms(sweep_s), "sweep_requeued": touched,
        "former_per_run_checks_ms": ms(per_run_s),
    }
    print(json.dumps(report, indent=2))
    out = args.out or ROOT / "bench" / "results" / "heartbeat-backlog" / f"{report['database']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": " ".join(["python bench/site/heartbeat_backlog.py", *sys.argv[1:]]),
                               "runs": args.runs, **report}, indent=2) + "\n")
    for key in queueing.connection().scan_iter(f"rq:*{settings.GPU_QUEUE_PREFIX}*"):
        queueing.connection().delete(key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
