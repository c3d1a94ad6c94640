"""An organizer's reason in Chromium, in both languages: the access page's reason stops at 2,000
characters as typed, and a longer one posted anyway (a page from an older site, a script) is refused
next to its form, saying how long a reason may be, with the account typed kept; nobody is banned."""
import pytest

from submissions.models import AuditEntry, GpuType, Season, SeasonBan
from submissions.services import accounts
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED = {"en-US": "A reason is at most 2000 characters (this one has 2001)",
           "zh-CN": "原因最多 2000 个字符（此原因有 2001 个）"}


@pytest.fixture
def season_and_people(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    return season


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_reason_over_2000_characters_is_stopped_and_refused_next_to_its_form(
        live_server, page, season_and_people, language):
    site = live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/seasons/S1/access/")
    reason = page.locator("#ban-form input[name=reason]")
    reason.click()
    page.keyboard.insert_text("长" * 2001)
    assert len(reason.input_value()) == 2000  # the input's maxlength

    page.fill("#ban-form input[name=account]", "bob")
    reason.evaluate("e => { e.removeAttribute('maxlength'); e.value = '长'.repeat(2001); }")
    with page.expect_navigation():
        page.click("#ban-form button")
    assert REFUSED[language] in page.locator("#ban-error").inner_text()
    assert page.locator("#ban-form input[name=account]").input_value() == "bob"
    assert not SeasonBan.objects.exists() and not AuditEntry.objects.filter(action="access.banned").exists()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert [e for e in page.console_errors if "status of 400" not in e] == []  # the refusal's own 400 alone
