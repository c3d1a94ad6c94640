"""On a 390 px phone and at 1280 px, in both languages: a leaderboard row shows every figure of the row
without scrolling sideways (the walk saw the rank and the name only, the scores out of sight), and a
note under a run (noisy timing, a second judging, ...) reads whole on the screen instead of running off
its scrolled table."""
import pytest

from submissions.models import Run
from tests.browser.test_every_page import LANGUAGES
from tests.browser.test_public_pages import shoot

pytestmark = pytest.mark.django_db(transaction=True)

# Each visible cell of a board's rows: its box and its text.
ROW_CELLS = """table => [...document.querySelectorAll(`${table} tbody tr`)].map(tr =>
  [...tr.querySelectorAll('td')].map(td => {
    const box = td.getBoundingClientRect();
    return {text: td.innerText.trim(), left: box.left, right: box.right, top: box.top, width: box.width};
  }))"""
HEADINGS = """table => [...document.querySelectorAll(`${table} thead th`)].map(th => th.textContent.trim())"""
# Where the text of an element is drawn: the union of its lines' boxes.
TEXT_EXTENT = """selector => {
  const range = document.createRange();
  range.selectNodeContents(document.querySelector(selector));
  const box = range.getBoundingClientRect();
  return {left: box.left, right: box.right};
}"""


def assert_rows_shown_whole(page, table, width):
    rows = page.evaluate(ROW_CELLS, table)
    headings = page.evaluate(HEADINGS, table)
    assert rows, table
    for cells in rows:
        assert len(cells) == len(headings), (table, cells)
        for cell, heading in zip(cells, headings):
            assert cell["width"] > 0 and cell["left"] >= 0 and cell["right"] <= width, (table, heading, cell)
        if width < 600:  # the table's heading row is out of sight: each figure says what it is
            for cell, heading in list(zip(cells, headings))[2:]:
                assert cell["text"].startswith(heading), (table, heading, cell)
        else:  # a table, each row one line
            assert len({round(cell["top"]) for cell in cells}) == 1, (table, cells)


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_leaderboard_row_shows_every_figure_without_scrolling(live_server, page, season_with_results, language,
                                                                 width):
    page.set_viewport_size({"width": width, "height": 844})
    for path, table in (("/seasons/S1/leaderboard/", "#leaderboard-table table.standings"),
                        ("/seasons/S1/gpus/h100/", "table.standings")):
        page.goto(f"{live_server.url}{path}")
        assert_rows_shown_whole(page, table, width)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.goto(f"{live_server.url}/seasons/S1/leaderboard/")
    shoot(page, f"leaderboard-{language[:2]}-{width}")
    assert page.console_errors == []


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_note_under_a_run_reads_whole_on_the_screen(live_server, page, season_with_results, language, width):
    _, samples = season_with_results
    run = Run.objects.get(submission=samples[2], gpu_type__slug="h100")
    run.flags = ["timing_noisy"]
    run.save(update_fields=["flags"])
    page.set_viewport_size({"width": width, "height": 844})
    page.goto(f"{live_server.url}/submissions/{samples[2].pk}/")
    note = f"#noisy-note-{run.pk} td"
    assert page.locator(note).inner_text().startswith(("Noisy timing", "计时噪声大"))
    extent = page.evaluate(TEXT_EXTENT, note)
    assert extent["left"] >= 0 and extent["right"] <= width, extent
    shoot(page, f"submission-note-{language[:2]}-{width}")
    assert page.console_errors == []
