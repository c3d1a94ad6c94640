"""The dataset page in Chromium, in both languages, when the season ended with its scoreboard frozen: an
export holding results from after the freeze waits for the thaw (the page says so, the publish button is
not there, a forced post is refused with why); one made before the freeze may be published meanwhile."""
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard
from submissions.models import DatasetExport, GpuType, Season
from submissions.services import accounts, datasets
from tests.browser.test_review_console import log_in
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = {
    "en-US": {"held": "after the thaw", "publish": "Publish for everyone",
              "refused": "gpucodeforces-S1-v2 holds results from after the scoreboard of S1 froze"},
    "zh-CN": {"held": "解封后", "publish": "向所有人公开",
              "refused": "gpucodeforces-S1-v2 包含 S1 封榜之后的结果"},
}


@pytest.fixture
def frozen_ended_season(queue_prefix, settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU")
    datasets.export_season(season, actor=organizer.user, reason="before the freeze")
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 0.5)}, title="GELU")
    datasets.export_season(season, actor=organizer.user, reason="after the final system test")
    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.save()
    return season, organizer


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_export_from_after_the_freeze_waits_for_the_thaw(live_server, page, frozen_ended_season, language):
    season, organizer = frozen_ended_season
    text = TEXT[language]
    site = live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/seasons/S1/dataset/")
    after_freeze, before_freeze = page.locator("#export-2 td.published"), page.locator("#export-1 td.published")
    assert after_freeze.inner_text().strip() == text["held"] and after_freeze.locator("form").count() == 0
    assert text["publish"] in before_freeze.inner_text()

    # a post made anyway (a page left open since before the freeze) is refused, saying why
    page.evaluate("""() => { const f = document.querySelector('#export-1 form').cloneNode(true);
                              f.action = f.action.replace('/v1/', '/v2/'); f.id = 'forced';
                              document.body.appendChild(f); }""")
    page.fill("#forced input[name=reason]", "open data")
    with page.expect_navigation():
        page.click("#forced button")
    assert text["refused"] in page.locator(".message.error").inner_text()
    assert DatasetExport.objects.get(number=2).published_at is None

    unfreeze_scoreboard(season, organizer.user, reason="results day")
    page.goto(f"{site}/organizer/seasons/S1/dataset/")
    page.fill("#export-2 input[name=reason]", "open data")
    with page.expect_navigation():
        page.locator("#export-2 button", has_text=text["publish"]).click()
    assert DatasetExport.objects.get(number=2).published_at is not None
    assert not page.console_errors
