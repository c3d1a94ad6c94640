"""With the board cache in each gunicorn worker (the default), no worker serves a board rendered before
a change once the change is committed: the keys name the season's board version, read from the
database with the season. The site as scripts/platform.sh runs it (deploy/gunicorn.conf.py, 2 workers)
on the test database; the access log names the worker (pid) that answered each request."""
import os
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from submissions.models import Contestant, GpuType, Season
from submissions.services import accounts
from tests.gunicorn_site import GunicornSite
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
        "GUNICORN_CMD_ARGS": "--access-logformat '%(p)s %(r)s'"})  # "<pid> GET /path?query HTTP/1.1"
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
