"""In Chromium, in both languages: an organizer who answers a question or posts an announcement without
a reason is told to say why, in the words of every other organizer form (it said only "This field is
required."), next to the reason; nothing is answered or announced, and the typed text stays."""
import pytest

from clarifications import services
from clarifications.models import Announcement, Clarification
from submissions.models import GpuType, Season
from submissions.services import accounts
from tests.browser.test_clarifications_pages import in_language
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

SAY_WHY = "Say why: the reason is kept in the audit trail."


@pytest.fixture
def waiting_question(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    bob = accounts.register_contestant("bob", "pw-bob-123456", display_name="Bob")
    return services.ask(season, bob.user, "May the kernel use tensor cores? 可以用张量核心吗")


def post_without_reason(page, form, field, text):
    page.evaluate("f => document.querySelector(f).noValidate = true", form)  # the site's answer, not the browser's
    page.fill(f"{form} [name={field}]", text)
    with page.expect_navigation():
        page.locator(f"{form} button").last.click()


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_answer_or_announcement_without_a_reason_is_told_to_say_why(live_server, page, waiting_question, language):
    site, say_why = live_server.url, in_language(language, SAY_WHY)
    assert say_why != SAY_WHY or language == "en-US"
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/clarifications/")
    post_without_reason(page, ".answer-form", "answer", "可以。Yes.")
    assert say_why in page.locator(".answer-form").first.inner_text()
    assert page.locator(".answer-form [name=answer]").first.input_value() == "可以。Yes."
    assert Clarification.objects.get(pk=waiting_question.pk).answer == ""

    page.goto(f"{site}/organizer/clarifications/")
    post_without_reason(page, "#announce-form", "text", "今晚结束 **tonight**")
    assert say_why in page.locator("#announce-form").inner_text()
    assert not Announcement.objects.exists()
