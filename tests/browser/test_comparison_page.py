"""In Chromium, in both languages: a contestant goes from their issue's page to the comparison of their own
versions, a table and a chart of each version's speedup per GPU type (the best ranked one in bold, a
provisional one marked, a run still queued or that failed saying so); another contestant finds none of
theirs there."""
import pytest

from submissions.bundles import build_bundle
from submissions.models import GpuType, Run, Season
from submissions.services import accounts, submitting
from tests.browser.test_public_pages import assert_charts_drawn, shoot
from tests.browser.test_review_console import log_in
from tests.judged_data import mark_passed
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = {
    "en-US": {"version": "Version", "provisional": "provisional", "queued": "Queued", "wrong": "Wrong answer",
              "axis": "speedup (×)"},
    "zh-CN": {"version": "版本", "provisional": "暂定", "queued": "排队中", "wrong": "答案错误", "axis": "加速比（×）"},
}


@pytest.fixture
def three_versions(queue_prefix):
    """Alice's issue with three versions: v1 passed on the CPU and wrong on the C500, v2 passed on both
    (the best), v3 passed on the CPU awaiting a second judging, still queued on the C500."""
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"),
                         GpuType.objects.create(slug="c500", name="MetaX C500"))
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    issue = submitting.open_issue(season, alice, title="Fused GELU")
    versions = [submitting.create_submission(alice, issue, build_bundle(valid_files()), note=f"try {n}")
                for n in (1, 2, 3)]
    mark_passed(versions[0], "cpu", 1.5, 0.2)
    Run.objects.filter(submission=versions[0], gpu_type__slug="c500").update(status="done", verdict="wrong_answer")
    mark_passed(versions[1], "cpu", 2.4, 0.125)
    mark_passed(versions[1], "c500", 1.8, 0.3)
    mark_passed(versions[2], "cpu", 3.1, 0.1)
    Run.objects.filter(submission=versions[2], gpu_type__slug="cpu").update(flags=["awaiting_second_judging"])
    return issue, versions


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_contestant_compares_their_versions_in_a_table_and_a_chart(live_server, page, three_versions, language):
    text = TEXT[language]
    issue, versions = three_versions
    site = live_server.url
    log_in(page, site, "alice", "pw-alice-12345")
    page.goto(f"{site}/issues/{issue.code}/")
    with page.expect_navigation():
        page.locator("#compare-versions").click()
    assert page.url == f"{site}/issues/{issue.code}/versions/"

    table = page.locator("table#versions")
    assert table.locator("thead th").all_inner_texts()[0] == text["version"]
    assert table.locator("thead th[data-gpu-type]").all_inner_texts() == ["MetaX C500", "CPU"]
    rows = [[cell.strip() for cell in row.locator("td").all_inner_texts()] for row in table.locator("tbody tr").all()]
    assert [row[:2] + row[3:4] for row in rows] == [["v1", f"#{versions[0].pk}", "try 1"],
                                                    ["v2", f"#{versions[1].pk}", "try 2"],
                                                    ["v3", f"#{versions[2].pk}", "try 3"]]
    assert [row[4:] for row in rows] == [[text["wrong"], "1.50×"], ["1.80×", "2.40×"],
                                         [text["queued"], f"3.10× {text['provisional']}"]]
    # the best ranked figure on each GPU type; a provisional one does not rank
    assert page.locator("#version-2 td.best strong").all_inner_texts() == ["1.80×", "2.40×"]

    assert_charts_drawn(page, 1)
    traces = page.evaluate("() => document.querySelector('#versions-chart [data-figure]').data"
                           ".map(t => [t.name, t.x, t.y, t.marker.symbol])")
    assert traces == [["MetaX C500", ["v1", "v2", "v3"], [None, 1.8, None], ["circle", "circle", "circle"]],
                      ["CPU", ["v1", "v2", "v3"], [1.5, 2.4, 3.1], ["circle", "circle", "circle-open"]]]
    assert text["axis"] in page.locator("#versions-chart [data-figure]").inner_html()
    shoot(page, f"versions-{language[:2]}")
    assert page.console_errors == []

    page.context.clear_cookies()  # another contestant, at the same address
    log_in(page, site, "bob", "pw-bob-12345")
    page.goto(f"{site}/issues/{issue.code}/")
    assert page.locator("#compare-versions").count() == 0
    page.goto(f"{site}/issues/{issue.code}/versions/")
    assert page.locator("#no-versions").count() == 1 and page.locator("table#versions").count() == 0
    content = page.content()
    assert not any(f"#{v.pk}<" in content for v in versions) and "try 1" not in content
    assert page.console_errors == []
