"""In Chromium, in both languages: the season settings page's history keeps a long reason readable. A
2,000-character reason (the most a reason may have) stood in a column a few characters wide and made
the table thousands of pixels tall; it now has a readable width and scrolls within its cell, whole."""
import pytest

from submissions.models import GpuType, Season
from submissions.services import accounts, season_settings
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

LONG_REASON = "封榜原因 " + "长" * (season_settings.REASON_MAX_CHARS - 5)


@pytest.fixture
def season_with_a_long_reason(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    season_settings.change_settings(season, {"is_open": False}, actor=organizer.user, reason=LONG_REASON)
    return season


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_long_reason_in_the_history_is_readable_and_whole(live_server, page, season_with_a_long_reason,
                                                            language, width):
    log_in(page, live_server.url, "organizer", "pw-organizer-1")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/organizer/seasons/S1/settings/#history")
    cell = page.locator("#season-history tbody tr").first.locator("td").last
    box = cell.bounding_box()
    assert box["width"] >= 240, box  # 16rem: some twenty characters a line, not four
    assert box["height"] <= 260, box  # 12rem of text and the cell's padding
    assert cell.inner_text().strip() == LONG_REASON  # nothing is lost: the rest scrolls
