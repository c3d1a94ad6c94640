"""With the board cache in each gunicorn worker (the default) or shared in Redis, no worker serves a
board that misses a change committed longer than BOARD_STALE_SECONDS ago, and with 0 none that misses
any committed change: entries name the season's board version, read from the database with the
season. The site as scripts/platform.sh runs it (deploy/gunicorn.conf.py, 2 workers) on the test
database; the access log names the worker (pid) that answered each request."""
import os
import re
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.db import connection

from submissions.models import Contestant, GpuType, Season
from submissions.services import accounts
from live_platform.gunicorn_site import GunicornSite
from tests.judged_data import accepted_sample
from tests.page_text import shows

pytestmark = pytest.mark.django_db(transaction=True)
PATHS = ("/seasons/S1/leaderboard/", "/seasons/S1/leaderboard/?fragment=1", "/api/v1/seasons/S1/leaderboard", "/")


def database_url():
    """The test database, as DATABASE_URL names it, for the site's own processes."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def answers_until_both_workers_answered(site, log, path):
    """Bursts of 8 concurrent requests (a connection each) until both workers have answered `path`
    since the log's current end; returns every answer's body."""
    start = len(log.read_text().splitlines()) if log.exists() else 0
    bodies = []
    for _ in range(40):
        with ThreadPoolExecutor(8) as pool:
            bodies += pool.map(lambda _: urllib.request.urlopen(site.url + path, timeout=30).read().decode(), range(8))
        pids = {line.split()[0] for line in log.read_text().splitlines()[start:] if line.split()[2:3] == [path]}
        if len(pids) >= 2:
            return bodies
    raise AssertionError(f"one worker answered every request of {path}")


def seasons_and_contestants():
    """What the database holds, for a failure's message."""
    return ([(s.code, s.starts_at.isoformat()) for s in Season.objects.all()],
            list(Contestant.objects.values_list("display_name", flat=True)))


def test_no_worker_serves_a_board_rendered_before_a_change(tmp_path, monkeypatch):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-123", display_name="Bob")
    organizer = accounts.register_contestant("organizer", "pw-org-123", display_name="Org", is_staff=True)
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})

    log = tmp_path / "access.log"
    site = GunicornSite(tmp_path / "site.log", env={
        **os.environ, "DATABASE_URL": database_url(), "ALLOWED_HOSTS": "127.0.0.1",
        "GUNICORN_WORKERS": "2", "GUNICORN_ACCESS_LOG": str(log), "BOARD_CACHE_URL": "locmem",
        "BOARD_STALE_SECONDS": "0", "GUNICORN_CMD_ARGS": "--access-logformat '%(p)s %(r)s'"})  # "<pid> GET /path?query HTTP/1.1"
    site.start()
    try:
        for path in PATHS:
            wrong = [body for body in answers_until_both_workers_answered(site, log, path)
                     if "Alice" not in body or shows(body, "Bob")]
            assert not wrong, (path, seasons_and_contestants(), wrong[0][-3000:])
        accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})  # committed: no test transaction here
        for path in PATHS:
            wrong = [body for body in answers_until_both_workers_answered(site, log, path) if "Bob" not in body]
            assert not wrong, (path, seasons_and_contestants(), wrong[0][-3000:])
    finally:
        site.stop()


REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
NAMED = re.compile(r"Alice (\d+)")
BOUND = 1.0  # BOARD_STALE_SECONDS, as the site runs by default


@pytest.mark.parametrize("board_cache_url", ["locmem", "redis"])
def test_under_churn_no_answer_misses_a_change_committed_longer_ago_than_the_bound(tmp_path, board_cache_url):
    """Alice is renamed over and over ("Alice 0", "Alice 1", ...) while 8 clients read every board: an
    answer may show an earlier name only if the rename that replaced it committed less than BOUND
    before the request was sent. Then a visitor alone sees the last name at once."""
    season = Season.objects.create(code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice 0")
    organizer = accounts.register_contestant("organizer", "pw-org-123", display_name="Org", is_staff=True)
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    prefix = f"test-boards-{uuid.uuid4().hex[:10]}"
    site = GunicornSite(tmp_path / "site.log", env={
        **os.environ, "DATABASE_URL": database_url(), "ALLOWED_HOSTS": "127.0.0.1", "GUNICORN_WORKERS": "2",
        "GUNICORN_ACCESS_LOG": "/dev/null", "BOARD_STALE_SECONDS": str(BOUND),
        # a shared cache under keys of this test's own (the Redis database is shared)
        "BOARD_CACHE_URL": "locmem" if board_cache_url == "locmem" else REDIS_URL,
        "BOARD_CACHE_KEY_PREFIX": prefix})
    site.start()
    committed = [(0, time.monotonic())]  # (rename, a time after its commit)
    stop, answers = threading.Event(), []

    def rename():
        for number in range(1, 1000):
            if stop.wait(0.05):
                break
            accounts.update_profile(alice, display_name=f"Alice {number}")
            committed.append((number, time.monotonic()))
        connection.close()

    def read(path):
        while not stop.is_set():
            sent = time.monotonic()
            body = urllib.request.urlopen(site.url + path, timeout=30).read().decode()
            answers.append((path, sent, int(NAMED.search(body).group(1))))

    try:
        renamer = threading.Thread(target=rename)
        renamer.start()
        with ThreadPoolExecutor(8) as pool:
            readers = [pool.submit(read, PATHS[i % len(PATHS)]) for i in range(8)]
            time.sleep(4)
            stop.set()
            for reader in readers:
                reader.result()
        renamer.join()
        last = committed[-1][0]
        assert last > 20 and len(answers) > 100, (last, len(answers))
        late = [(path, shown, max(n for n, at in committed if at < sent - BOUND))
                for path, sent, shown in answers if committed[0][1] < sent - BOUND]
        assert late and not [(path, shown, due) for path, shown, due in late if shown < due], late
        for path in PATHS:
            body = urllib.request.urlopen(site.url + path, timeout=30).read().decode()
            assert {int(n) for n in NAMED.findall(body)} == {last}, path
    finally:
        stop.set()
        site.stop()
        if board_cache_url == "redis":
            server = redis.Redis.from_url(REDIS_URL)
            for name in server.scan_iter(f"{prefix}:*"):
                server.delete(name)
