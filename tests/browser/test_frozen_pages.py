"""A frozen season in Chromium, in both languages: a visitor's per-GPU board and hardware comparison
show the results as they were at the freeze, under the frozen notice; an organizer sees the live
board, told that the public sees the frozen one."""
import pytest

from leaderboard.services import freeze_scoreboard
from submissions.models import GpuType, Season
from submissions.services import accounts
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = {
    "en-US": {"frozen": "The scoreboard is frozen since", "thaws": "results after that are revealed when it thaws",
              "organizer": "Organizer view: the live board. The public sees the frozen one."},
    "zh-CN": {"frozen": "排行榜自", "thaws": "此后的结果将在解封时公布",
              "organizer": "组织者视图：实时排行榜。公众看到的是封榜时的排行榜。"},
}


@pytest.fixture
def frozen_season(queue_prefix):
    """Alice accepted before the freeze, Bob (faster) after it."""
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    h100 = GpuType.objects.create(slug="h100", name="NVIDIA H100")
    season.gpu_types.add(h100, GpuType.objects.create(slug="c500", name="MetaX C500"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    accepted_sample(season, alice, organizer, {"h100": (3.1, 0.021), "c500": (2.4, 0.034)}, title="Fused GELU")
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    accepted_sample(season, bob, organizer, {"h100": (5.2, 0.012), "c500": (3.9, 0.02)}, title="RMSNorm")
    return season


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_the_public_sees_the_frozen_gpu_board_and_hardware_comparison(live_server, page, frozen_season, language):
    text = TEXT[language]
    site = live_server.url
    for path, table, name in (("/seasons/S1/gpus/h100/", "table.standings", "gpu-board"),
                              ("/seasons/S1/hardware/", "table.matrix", "hardware")):
        page.goto(f"{site}{path}")
        notice = page.locator(".frozen-notice")
        assert notice.count() == 1 and text["frozen"] in notice.inner_text() and text["thaws"] in notice.inner_text()
        rows = page.locator(f"{table} tbody").inner_text()
        assert "Alice" in rows and "Bob" not in rows, path
        shoot(page, f"frozen-{name}-{language[:2]}")
    assert page.console_errors == []

    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/seasons/S1/gpus/h100/")
    assert page.locator(".frozen-notice").inner_text() == text["organizer"]
    rows = page.locator("table.standings tbody tr")
    assert "Bob" in rows.nth(0).inner_text() and "Alice" in rows.nth(1).inner_text()  # the faster first, live
    shoot(page, f"frozen-gpu-board-organizer-{language[:2]}")
    page.goto(f"{site}/seasons/S1/hardware/")
    assert "Bob" in page.locator("table.matrix tbody").inner_text()
    assert page.locator(".frozen-notice").count() == 1
    assert page.console_errors == []
