"""Leaderboard latency with a big season: 10,000 contestants and 200,000 submissions.

    python bench/leaderboard_bench.py [--contestants 10000] [--submissions 200000] [--requests 60]

Fills a separate database (default: SQLite at var/bench.sqlite3; DATABASE_URL overrides), materializes
standings the way the site does (the season's ranking rule), then times the first page of the season
leaderboard, its JSON twin and the home page through Django's full request stack, and prints medians.
"""
import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(database_url):
    os.environ.setdefault("DATABASE_URL", database_url)
    os.environ["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings"
    import django

    django.setup()


def populate(n_contestants, n_submissions, seed=7):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import transaction
    from django.utils import timezone

    from submissions.models import Contestant, GpuType, Issue, Season, Standing, Submission
    from submissions.services.standings import rerank

    rng = random.Random(seed)
    User = get_user_model()
    with transaction.atomic():
        season = Season.objects.create(code="S1", name="Benchmark season")
        season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
        unusable = make_password(None)
        User.objects.bulk_create([User(username=f"user{i}", password=unusable) for i in range(n_contestants)],
                                 batch_size=2000)
        users = list(User.objects.order_by("pk").values_list("pk", flat=True))
        Contestant.objects.bulk_create(
            [Contestant(user_id=u, display_name=f"Contestant {i}", affiliation=f"University {i % 300}")
             for i, u in enumerate(users)], batch_size=2000)
        contestants = list(Contestant.objects.order_by("pk").values_list("pk", flat=True))
        Issue.objects.bulk_create(
            [Issue(season=season, code=f"{i:06d}"[-6:].translate(str.maketrans("0123456789", "ABCDEFGHIJ")),
                   title=f"operator {i}", author_id=c) for i, c in enumerate(contestants)], batch_size=2000)
        issue_of = dict(Issue.objects.values_list("author_id", "pk"))
        now = timezone.now()
        batch = []
        for i in range(n_submissions):
            c = contestants[rng.randrange(len(contestants))]
            batch.append(Submission(issue_id=issue_of[c], contestant_id=c, bundle_sha256=f"{i:064x}"))
            if len(batch) == 5000:
                Submission.objects.bulk_create(batch)
                batch = []
        Submission.objects.bulk_create(batch)
        counts = {}
        for c in Submission.objects.values_list("contestant_id", flat=True).iterator(chunk_size=20000):
            counts[c] = counts.get(c, 0) + 1
        Standing.objects.bulk_create([
            Standing(season=season, contestant_id=c, submission_count=n,
                     accepted_count=rng.choice([0, 0, 1, 1, 2, 3, 5]), base_score=float(rng.randrange(0, 60)),
                     bonus=float(rng.choice([0, 0, 5, 10])), first_submission_at=now)
            for c, n in counts.items()], batch_size=2000)
        started = time.perf_counter()
        rerank(season)
        rerank_s = time.perf_counter() - started
    return season, rerank_s


def rerank_after_review(season):
    """What a review costs: one row changes, the season is re-ranked, moved rows are written."""
    from django.db import transaction

    from submissions.models import Standing
    from submissions.services.standings import rerank

    row = Standing.objects.filter(season=season).order_by("-rank").first()
    row.accepted_count = 99
    row.save()
    started = time.perf_counter()
    with transaction.atomic():
        moved = rerank(season)
    elapsed = (time.perf_counter() - started) * 1000
    print(f"  ({moved} rows changed rank)")
    return elapsed


def time_get(client, path, n):
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(path)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return statistics.median(samples), max(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contestants", type=int, default=10_000)
    parser.add_argument("--submissions", type=int, default=200_000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench.sqlite3'}")
    args = parser.parse_args()
    (ROOT / "var").mkdir(exist_ok=True)
    if args.database_url.startswith("sqlite:///"):
        Path(args.database_url[len("sqlite:///"):]).unlink(missing_ok=True)
    setup_django(args.database_url)

    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    if connection.vendor == "postgresql":
        call_command("flush", "--noinput", verbosity=0)
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    season, rerank_s = populate(args.contestants, args.submissions)
    with connection.cursor() as cursor:  # fresh statistics, as autovacuum would give a live database
        cursor.execute("ANALYZE")
    print(f"database: {connection.vendor}; filled {args.contestants} contestants, {args.submissions} submissions "
          f"in {time.perf_counter() - started:.1f} s; ranking all standings took {rerank_s * 1000:.0f} ms")
    print(f"one review moves a contestant to the top: re-ranking took {rerank_after_review(season):.0f} ms")
    client = Client()
    client.get("/seasons/S1/leaderboard/")  # warm caches and template loading
    for label, path in (("leaderboard page 1", "/seasons/S1/leaderboard/"),
                        ("leaderboard page 100", "/seasons/S1/leaderboard/?page=100"),
                        ("leaderboard JSON", "/api/v1/seasons/S1/leaderboard"),
                        ("home", "/")):
        median, worst = time_get(client, path, args.requests)
        print(f"{label:22s} median {median:7.2f} ms   max {worst:7.2f} ms   ({args.requests} requests)")


if __name__ == "__main__":
    main()
