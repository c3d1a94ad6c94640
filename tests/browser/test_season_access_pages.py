"""Season access in Chromium, in both languages: an organizer makes a season invite-only, hands out an
invite code and bans a contestant, each with a reason, on the season's access page; the banned
contestant leaves the leaderboard; a contestant follows the code's link, joins, and the season's page
says they are admitted."""
import pytest

from submissions.models import GpuType, InviteCode, Season, SeasonAdmission, SeasonBan
from submissions.services import accounts
from tests.browser.test_every_page import PHONE_WIDTH, TagBalance
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in
from tests.judged_data import accepted_sample
from tests.page_text import shows

pytestmark = pytest.mark.django_db(transaction=True)

# Strings the catalog translates already: the page is in the reader's language.
TEXT = {"en-US": {"lang": "en", "audit": "Audit trail", "reason": "reason (kept in the audit trail)"},
        "zh-CN": {"lang": "zh-hans", "audit": "审计日志", "reason": "原因（记入审计日志）"}}


@pytest.fixture
def contest(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    mallory = accounts.register_contestant("mallory", "pw-mallory-12345", display_name="Mallory")
    accepted_sample(season, mallory, organizer, {"cpu": (9.0, 0.1)}, title="Too fast")
    return season


def assert_well_formed_on_a_phone(page):
    """The page as the server sent it has balanced markup (no translated string opens a tag it does not
    close), and it fits a phone's width."""
    response = page.goto(page.url)
    balance = TagBalance()
    balance.feed(response.text())
    balance.close()
    assert balance.problems == []
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE_WIDTH
    page.set_viewport_size({"width": 1280, "height": 720})


def submit_form(page, form, fields):
    for name, value in fields.items():
        page.fill(f"{form} [name={name}]", value)
    with page.expect_navigation():
        page.locator(f"{form} button").click()


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_organizer_closes_a_season_hands_out_a_code_and_bans_and_a_contestant_joins(
        live_server, page, contest, language):
    text, site = TEXT[language], live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/")
    with page.expect_navigation():
        page.locator("#season-access a", has_text="S1").click()
    assert page.locator("html").get_attribute("lang") == text["lang"]
    assert page.locator("h2", has_text=text["audit"]).count() == 1
    assert page.locator("#admission-form input[name=reason]").get_attribute("placeholder") == text["reason"]

    # a reason left out: the page says so next to the form and keeps what was typed
    page.select_option("#admission-form select", "invite_only")
    page.fill("#admission-form input[name=reason]", " ")
    page.eval_on_selector("#admission-form input[name=reason]", "input => input.removeAttribute('required')")
    with page.expect_navigation():
        page.locator("#admission-form button").click()
    assert page.locator("#admission-error").count() == 1
    assert [error for error in page.console_errors if "400" not in error] == []  # the refusal's status, alone
    page.console_errors.clear()
    assert Season.objects.get().admission == "open"
    page.select_option("#admission-form select", "invite_only")
    submit_form(page, "#admission-form", {"reason": "finals: qualified teams only"})
    assert page.locator("#admission-form select").input_value() == "invite_only"

    submit_form(page, "#invite-form", {"max_uses": "1", "reason": "team Tsinghua"})
    code = InviteCode.objects.get().code
    row = page.locator(f"#invite-{code}")
    assert "0 / 1" in row.inner_text()
    link = row.locator(".invite-link").inner_text().strip()
    assert link.endswith(f"/seasons/S1/join/?code={code}")

    submit_form(page, "#ban-form", {"account": "mallory", "reason": "timer tampering in three submissions"})
    assert "timer tampering in three submissions" in page.locator("#ban-mallory").inner_text()
    assert SeasonBan.objects.get().reason == "timer tampering in three submissions"
    assert page.locator("#audit tbody tr").count() == 3
    shoot(page, f"season-access-{language[:2]}")
    assert_well_formed_on_a_phone(page)
    page.goto(f"{site}/seasons/S1/leaderboard/")
    assert not shows(page.locator("main").inner_text(), "Mallory")

    page.context.clear_cookies()  # alice, with the link the organizers sent her
    log_in(page, site, "alice", "pw-alice-12345")
    page.goto(link)
    assert page.locator("#join-code").input_value() == code
    assert_well_formed_on_a_phone(page)
    with page.expect_navigation():
        page.locator("#join-form button").click()
    assert page.url.endswith("/seasons/S1/")
    assert page.locator("#season-access").count() == 1 and page.locator("#season-join-link").count() == 0
    assert SeasonAdmission.objects.get().contestant.user.username == "alice"
    shoot(page, f"season-joined-{language[:2]}")
    assert page.console_errors == []
