"""Under gunicorn as deployed (deploy/gunicorn.conf.py), a long address reaches the site: the walk's
5,000-character search got gunicorn's bare 414 (its request-line limit was the default 4,094 bytes);
now the leaderboard answers, searching the first 100 characters and saying so."""
import os
import urllib.error
import urllib.request

import pytest

from submissions.models import GpuType, Season
from tests.e2e.test_board_cache_workers import database_url
from live_platform.gunicorn_site import GunicornSite

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_5000_character_search_reaches_the_site_under_gunicorn(tmp_path):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    site = GunicornSite(tmp_path / "site.log", env={
        **os.environ, "DATABASE_URL": database_url(), "ALLOWED_HOSTS": "127.0.0.1", "GUNICORN_WORKERS": "1"})
    site.start()
    try:
        path = "/seasons/S1/leaderboard/?q=" + "a" * 5000
        try:
            page = urllib.request.urlopen(site.url + path, timeout=30).read().decode()
        except urllib.error.HTTPError as refused:
            pytest.fail(f"{refused.code}: {refused.read()[:300]!r}")
        assert "Searches are at most 100 characters long" in page
        with pytest.raises(urllib.error.HTTPError) as beyond:  # gunicorn's own limit still holds beyond 8190
            urllib.request.urlopen(site.url + "/?q=" + "a" * 8200, timeout=30)
        assert beyond.value.code == 414
    finally:
        site.stop()
