"""A visitor in a real browser: the leaderboard in both languages, charts drawn by plotly, no console errors.

Screenshots land in test-artifacts/; with SAVE_DOC_SCREENSHOTS=1 they are also written to docs/screenshots/.
"""
import os
import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, CJK_FONT_HINT, ROOT, draws_chinese

pytestmark = pytest.mark.django_db(transaction=True)
DOCS = ROOT / "docs" / "screenshots"


def shoot(page, name):
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("SAVE_DOC_SCREENSHOTS"):
        assert draws_chinese(page), CJK_FONT_HINT  # never a screenshot of boxes into docs/
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS / path.name)


def assert_charts_drawn(page, expected):
    page.wait_for_function(f"document.querySelectorAll('[data-figure] .main-svg').length >= {expected}",
                           timeout=30_000)
    assert page.locator("[data-figure][data-drawn='1']").count() >= expected


@pytest.mark.parametrize("language, heading, rule_text", [
    ("en-US", "Leaderboard", "Accepted count, then base score, then bonus"),
    ("zh-CN", "排行榜", "先比接受数量"),
])
def test_visitor_browses_the_leaderboard(live_server, page, season_with_results, language, heading, rule_text):
    page.goto(f"{live_server.url}/seasons/S1/leaderboard/")
    assert heading in page.locator("h1").inner_text()
    assert rule_text in page.content()
    names = page.locator("table.standings tbody tr td:nth-child(2) a").all_inner_texts()
    assert names == ["Alice", "Bob", "Carol"]
    shoot(page, f"leaderboard-{language[:2]}")
    page.click("text=Bob")
    assert "Bob" in page.locator("h1").inner_text() and "5.20×" in page.content()
    assert page.console_errors == []


@pytest.mark.parametrize("language", ["zh-CN"])
def test_chromium_draws_the_chinese_pages_in_chinese_characters(live_server, page, language):
    page.goto(f"{live_server.url}/")
    assert "首页" in page.locator("header").inner_text()
    assert draws_chinese(page), CJK_FONT_HINT


def test_language_switch_in_the_page(live_server, page, season_with_results):
    page.goto(f"{live_server.url}/")
    with page.expect_navigation():  # the switch posts the form and the page comes back in Chinese
        page.locator("header form.lang button", has_text="简体中文").click()
    assert "首页" in page.locator("header").inner_text()
    page.goto(f"{live_server.url}/seasons/S1/")
    assert "硬件对比" in page.content()


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_charts_render_on_season_hardware_and_submission_pages(live_server, page, season_with_results, language):
    _, samples = season_with_results
    page.goto(f"{live_server.url}/seasons/S1/")
    assert_charts_drawn(page, 2)
    shoot(page, f"season-{language[:2]}")
    page.goto(f"{live_server.url}/seasons/S1/hardware/")
    assert_charts_drawn(page, 1)
    cells = page.locator("table.matrix tbody tr", has_text="Fused GELU").locator("td.num").all_inner_texts()
    assert sorted(cells) == ["0.0210 · 3.10×", "0.0340 · 2.40×"]  # one cell per GPU type
    shoot(page, f"hardware-{language[:2]}")
    page.goto(f"{live_server.url}/submissions/{samples[2].pk}/")
    assert_charts_drawn(page, 3)  # latency, roofline, power and clock
    shoot(page, f"submission-{language[:2]}")
    assert page.console_errors == []
