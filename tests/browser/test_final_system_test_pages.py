"""The final system test in Chromium, in both languages: the organizer starts it on an ended season,
follows its progress and, once every run is judged, compares the provisional standings with the final
ones; the public board then says its standings are final."""
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.models import FinalSystemTest, GpuType, Season
from submissions.services import accounts, judging
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in
from tests.judged_data import accepted_sample
from tests.site.judging_helpers import hand_out, passed_result

pytestmark = pytest.mark.django_db(transaction=True)

# The page's own words come from the catalog once merged; the lines checked here are the table's
# column words the catalog holds already, and the state the page marks up.
TEXT = {"en-US": {"contestant": "Contestant", "leaderboard": "Leaderboard"},
        "zh-CN": {"contestant": "选手", "leaderboard": "排行榜"}}


@pytest.fixture
def ended_season(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one",
                                   ends_at=timezone.now() - timedelta(hours=1))
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-123456", display_name="Bob")
    accepted_sample(season, alice, organizer, {"cpu": (3.0, 1.0)}, title="ReLU")
    accepted_sample(season, alice, organizer, {"cpu": (3.0, 1.0)}, title="GELU")
    accepted_sample(season, bob, organizer, {"cpu": (2.0, 1.0)}, title="Softmax")
    failing = accepted_sample(season, alice, organizer, {"cpu": (3.0, 1.0)}, title="Tanh")
    agent, _ = accounts.create_agent("final-agent", GpuType.objects.all())
    return season, agent, failing


def _judge_final_runs(agent, failing):
    for run in FinalSystemTest.objects.get().rejudge.runs.order_by("pk"):
        hand_out(run, agent)
        run.refresh_from_db()
        _, secret = judging.start_run(run.pk, agent, run.attempts)
        result = passed_result(1.5)
        if run.submission_id == failing.pk:
            result["status"] = "wrong_answer"
        judging.record_result(run.pk, agent, secret, result)


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_organizer_runs_the_final_system_test_and_the_board_turns_final(live_server, page, ended_season, language):
    season, agent, failing = ended_season
    site = live_server.url
    page.goto(f"{site}/seasons/S1/leaderboard/")
    assert page.locator("#standings-status.provisional").count() == 1
    assert TEXT[language]["leaderboard"] in page.locator("h1").inner_text()

    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/seasons/")
    with page.expect_navigation():
        page.locator('a[href="/organizer/seasons/S1/final-system-test/"]').click()
    page.fill("#start-final-test input[name=reason]", "the season is over")
    with page.expect_navigation():
        page.locator("#start-final-test button").click()
    test = FinalSystemTest.objects.get()
    total = test.rejudge.runs.count()
    assert total == 4 and page.locator(f"#progress progress[max='{total}'][value='0']").count() == 1
    assert page.locator("#progress .standings-status.provisional").count() == 1
    shoot(page, f"final-system-test-running-{language[:2]}")

    _judge_final_runs(agent, failing)
    page.goto(f"{site}/organizer/seasons/S1/final-system-test/")
    assert page.locator(f"#progress progress[max='{total}'][value='{total}']").count() == 1
    assert page.locator("#failed-runs tbody tr").count() == 1
    assert TEXT[language]["contestant"] in page.locator("#comparison thead").inner_text()
    rows = page.locator("#comparison tbody tr")
    # Alice: rank 1 with 3 accepted, one fails its final run; she stays first, at the final runs' speed
    alice = rows.filter(has_text="Alice").inner_text()
    assert "3.00×" in alice and "1.50×" in alice
    assert page.locator(".standings-status.final").count() == 1
    shoot(page, f"final-system-test-final-{language[:2]}")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the tables scroll, the page does not
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 720})

    page.context.clear_cookies()  # a visitor
    page.goto(f"{site}/seasons/S1/leaderboard/")
    assert page.locator("#standings-status.final").count() == 1
    assert page.locator("#standings-status.provisional").count() == 0
    shoot(page, f"final-standings-board-{language[:2]}")
    assert page.console_errors == []
