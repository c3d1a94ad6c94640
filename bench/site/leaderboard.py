"""Leaderboard latency with a big season: 10,000 contestants and 200,000 submissions.

    python bench/site/leaderboard.py [--contestants 10000] [--submissions 200000] [--requests 80]
                                      [--clients 8] [--database-url URL] [--reuse] [--out FILE]
                                      [--review-every SECONDS]

Fills a separate database (default: SQLite at var/bench.sqlite3; --database-url overrides; PostgreSQL
is flushed first), materializes standings the way the site does (the season's ranking rule), then
runs the site as scripts/platform.sh does (gunicorn with deploy/gunicorn.conf.py, ALLOWED_HOSTS as it
sets it) and times leaderboard pages from the first to the last, the table fragment the page polls,
the JSON API at its first and last offset and the home page, with --clients concurrent clients,
each a process of its own with one keep-alive connection, as browsers are (threads of this process
would queue on its interpreter behind each other and behind the reviewer, and time that queue);
prints p50, p99 and the worst per page. Pages are served from the board cache once rendered
(leaderboard/board_cache.py); --review-every changes a standing and re-ranks the season that often
while the pages are timed, as reviews and agents' reports do in a contest: each makes every cached
board stale, so pages are rendered again.

Writes its figures, with the load average before and after and the command, to --out (default
bench/results/leaderboard/churn-<database>.json with --review-every, steady-<database>.json without).
"""
import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from live_platform.gunicorn_site import GunicornSite  # noqa: E402

PLATFORM_ALLOWED_HOSTS = "localhost,127.0.0.1,[::1]"  # what scripts/platform.sh exports
PAGE_SIZE = 50  # leaderboard.views.PAGE_SIZE


def setup_django(database_url):
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
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


def review_one(season, standing_id, accepted_count):
    """What a review does to the board: one standing changes in the season's lock, with its board key."""
    from django.db import transaction

    from submissions import board_versions
    from submissions.models import Standing
    from submissions.services.standings import store

    with transaction.atomic():
        board_versions.bump(season.pk, changes={})  # the season's lock first, as refresh_for takes it
        standing = Standing.objects.select_for_update().get(pk=standing_id)
        store(season, standing, {"accepted_count": accepted_count})


def review_to_the_top(season):
    """Milliseconds of a review that moves the last contestant to the top."""
    from submissions.models import Standing

    last = Standing.objects.filter(season=season).order_by("-board_key", "-contestant_id").first()
    started = time.perf_counter()
    review_one(season, last.pk, 99)
    return (time.perf_counter() - started) * 1000


def review_now_and_then(season, every, stop, done):
    """Until `stop` is set: every `every` seconds one standing changes (a new board version). Appends to
    `done` the milliseconds each took."""
    from django.db import connection

    from submissions.models import Standing

    rng = random.Random(3)
    ids = list(Standing.objects.filter(season=season).values_list("pk", flat=True))
    while not stop.wait(every):
        started = time.perf_counter()
        review_one(season, rng.choice(ids), rng.randrange(0, 8))
        done.append((time.perf_counter() - started) * 1000)
    connection.close()


def is_filled(n_contestants):
    from submissions.models import Season, Standing

    season = Season.objects.filter(code="S1").first()
    return season if season and Standing.objects.filter(season=season).count() == n_contestants else None


def fill(args):
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor == "postgresql":
        call_command("flush", "--noinput", verbosity=0)
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    season, rerank_s = populate(args.contestants, args.submissions)
    analyze()
    print(f"filled {args.contestants} contestants, {args.submissions} submissions "
          f"in {time.perf_counter() - started:.1f} s; ranking all standings took {rerank_s * 1000:.0f} ms")
    print(f"one review moves a contestant to the top: it took {review_to_the_top(season):.0f} ms")
    return season


def analyze():
    from django.db import connection

    with connection.cursor() as cursor:  # fresh statistics, as autovacuum would give a live database
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")


def percentile(values, fraction):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))]


def pages_to_time(n_contestants):
    last = max(1, -(-n_contestants // PAGE_SIZE))
    pages = sorted({1, 2, last // 4, last // 2, 3 * last // 4, last - 1, last} - {0})
    paths = [(f"leaderboard page {p}", f"/seasons/S1/leaderboard/?page={p}") for p in pages]
    paths.append((f"fragment page {last}", f"/seasons/S1/leaderboard/?page={last}&fragment=1"))
    paths += [("JSON offset 0", "/api/v1/seasons/S1/leaderboard"),
              (f"JSON offset {(last - 1) * PAGE_SIZE}", f"/api/v1/seasons/S1/leaderboard?offset={(last - 1) * PAGE_SIZE}"),
              ("home", "/")]
    return paths


def _client(site_url, share, ready, results):
    """One client: its own process and keep-alive connection (a browser's process, not a thread sharing
    the bench's interpreter with the reviewer). It asks for each of its pages once untimed (the worker
    its connection reached renders them, loads its templates and opens its database connection), then
    starts timing when every client is ready (started, connected and warm: 8 interpreters starting
    would be timed otherwise) and puts [(label, ms), ...] on `results`. Every answer must be 200."""
    import http.client
    from urllib.parse import urlsplit

    host = urlsplit(site_url)
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    connection.connect()
    timed = []
    try:
        for _, path in dict.fromkeys(share):  # untimed: what is timed is the site warm, as it runs
            connection.request("GET", path)
            connection.getresponse().read()
        ready.wait(120)  # a client that cannot start breaks the barrier for all
        for label, path in share:
            started = time.perf_counter()
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise AssertionError(f"{path}: HTTP {response.status}")
            timed.append((label, elapsed))
    finally:
        connection.close()
        results.put(timed)


def time_over_http(site_url, paths, requests_per_path, clients):
    """`clients` processes, each with its own keep-alive connection, send the paths' requests in a
    shuffled order; returns {label: [ms, ...]}."""
    import multiprocessing

    work = [(label, path) for label, path in paths for _ in range(requests_per_path)]
    random.Random(11).shuffle(work)
    context = multiprocessing.get_context("spawn")
    ready, results = context.Barrier(clients), context.Queue()
    processes = [context.Process(target=_client, args=(site_url, work[i::clients], ready, results))
                 for i in range(clients)]
    for process in processes:
        process.start()
    timed = [results.get() for _ in processes]
    for process in processes:
        process.join()
        if process.exitcode:
            raise AssertionError(f"a client failed (exit code {process.exitcode})")
    samples = {label: [] for label, _ in paths}
    for share in timed:
        for label, elapsed in share:
            samples[label].append(elapsed)
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contestants", type=int, default=10_000)
    parser.add_argument("--submissions", type=int, default=200_000)
    parser.add_argument("--requests", type=int, default=80, help="requests per page timed")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench.sqlite3'}")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the database when it already holds a season of --contestants standings")
    parser.add_argument("--out", default=None, help="write the figures here as JSON (default: "
                        "bench/results/leaderboard/churn-<database>.json, or steady-<database>.json)")
    parser.add_argument("--review-every", type=float, default=0,
                        help="seconds between standing changes while pages are timed (0: none)")
    args = parser.parse_args()
    (ROOT / "var").mkdir(exist_ok=True)
    load_before = os.getloadavg()
    setup_django(args.database_url)
    from django.db import connection

    if args.reuse:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # a database filled before the latest index gets it
    season = is_filled(args.contestants) if args.reuse else None
    if season is None:
        connection.close()
        if args.database_url.startswith("sqlite:///"):
            Path(args.database_url[len("sqlite:///"):]).unlink(missing_ok=True)
        season = fill(args)
    else:
        analyze()
        print(f"reusing the filled database ({args.contestants} standings)")
    vendor = connection.vendor
    connection.close()
    # The site as scripts/platform.sh runs it: its gunicorn config and its ALLOWED_HOSTS.
    env = dict(os.environ, DATABASE_URL=args.database_url, ALLOWED_HOSTS=PLATFORM_ALLOWED_HOSTS,
               GUNICORN_ACCESS_LOG="/dev/null")
    site = GunicornSite(ROOT / "var" / "leaderboard-bench-site.log", env=env)
    site.start()
    try:
        paths = pages_to_time(args.contestants)
        time_over_http(site.url, paths, 2, args.clients)  # warm every worker's caches and templates
        stop, reviews = threading.Event(), []
        reviewer = threading.Thread(target=review_now_and_then, args=(season, args.review_every, stop, reviews))
        if args.review_every:
            reviewer.start()
        try:
            samples = time_over_http(site.url, paths, args.requests, args.clients)
        finally:
            stop.set()
            if args.review_every:
                reviewer.join()
    finally:
        site.stop()
    print(f"database: {vendor}; {args.clients} clients through gunicorn ({args.requests} requests a page, "
          f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after)")
    if args.review_every:
        print(f"{len(reviews)} reviews while timing, one every {args.review_every:g} s "
              f"(each {statistics.median(reviews) if reviews else 0:.0f} ms median)")
    figures = {}
    for label, _ in paths:
        values = samples[label]
        figures[label] = {"p50": round(statistics.median(values), 1), "p99": round(percentile(values, 0.99), 1),
                          "max": round(max(values), 1)}
        print(f"{label:24s} p50 {figures[label]['p50']:7.1f} ms   p99 {figures[label]['p99']:7.1f} ms   "
              f"max {figures[label]['max']:7.1f} ms")
    # every request of the run: a page's own p99 is its 4th worst of 400, where one stall of the machine shows
    every = [ms for values in samples.values() for ms in values]
    overall = {"p50": round(statistics.median(every), 1), "p99": round(percentile(every, 0.99), 1),
               "max": round(max(every), 1)}
    print(f"{'every request':24s} p50 {overall['p50']:7.1f} ms   p99 {overall['p99']:7.1f} ms   max {overall['max']:7.1f} ms")
    out = Path(args.out) if args.out else (
        ROOT / "bench" / "results" / "leaderboard" / f"{'churn' if args.review_every else 'steady'}-{vendor}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    database = "sqlite" if vendor == "sqlite" else "postgres://…/" + args.database_url.rsplit("/", 1)[-1]
    out.write_text(json.dumps({
        "command": " ".join(["python bench/site/leaderboard.py", *(
            a if not a.startswith(("sqlite:", "postgres:")) else database for a in sys.argv[1:])]),
        "database": vendor, "contestants": args.contestants, "clients": args.clients, "requests": args.requests,
        "review_every_s": args.review_every, "reviews": len(reviews),
        "review_ms_median": round(statistics.median(reviews), 1) if reviews else None,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "worst_p99_ms": max(f["p99"] for f in figures.values()), "every_request": overall, "figures": figures}, indent=2) + "\n")
    print(f"figures written to {out}")


if __name__ == "__main__":
    main()
