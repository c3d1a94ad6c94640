"""Clarifications in Chromium, in both languages: a contestant reads the season's announcement and asks
a question from the season's clarifications page; an organizer answers it for everyone from the
organizers' page; the contestant's header counts the answer until the page is opened; a visitor
reads the question and answer without the asker's name."""
import pytest
from django.utils import translation

from clarifications import services
from clarifications.models import Clarification
from submissions.models import GpuType, Season
from submissions.services import accounts, submitting
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

LANGUAGE_CODES = {"en-US": "en", "zh-CN": "zh-hans"}


def in_language(language, message):
    """`message` as the site's catalog gives it in the browser's language."""
    with translation.override(LANGUAGE_CODES[language]):
        return translation.gettext(message)


@pytest.fixture
def season_with_announcement(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice Liddell")
    issue = submitting.open_issue(season, alice, title="Fused GELU")
    services.post_announcement(season, organizer.user, "Submissions close on **Friday** at noon (UTC).",
                               reason="the schedule")
    return issue


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_contestant_asks_an_organizer_answers_for_everyone_and_a_visitor_reads_it(
        live_server, page, season_with_announcement, language):
    site, issue = live_server.url, season_with_announcement
    log_in(page, site, "alice", "pw-alice-12345")
    page.goto(f"{site}/seasons/S1/")
    assert "Friday" in page.locator("#season-announcements").inner_text()
    with page.expect_navigation():
        page.locator("#season-clarifications-link").click()
    assert page.locator("html").get_attribute("lang") == LANGUAGE_CODES[language]
    assert in_language(language, "Clarifications") in page.locator("h1").inner_text()
    assert page.locator("article.announcement.unread strong", has_text="Friday").count() == 1
    page.fill("#ask-form textarea[name=question]", "May the GELU kernel use tensor cores?")
    page.fill("#ask-form input[name=issue]", issue.code)
    with page.expect_navigation():
        page.locator("#ask-form button[type=submit]").click()
    question = Clarification.objects.get()
    mine = page.locator(f"#mine-{question.pk}")
    assert "tensor cores" in mine.inner_text() and issue.code in mine.inner_text()
    assert in_language(language, "Waiting for an answer from the organizers.") in mine.inner_text()
    shoot(page, f"clarifications-season-{language[:2]}")

    page.context.clear_cookies()
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/clarifications/")
    waiting = page.locator(f"#waiting-{question.pk}")
    assert "Alice Liddell" in waiting.inner_text()
    waiting.locator("textarea[name=answer]").fill("Yes, through **WMMA** or inline PTX.")
    waiting.locator("input[name=visibility][value=public]").check()
    waiting.locator("input[name=reason]").fill("a rules question for everyone")
    shoot(page, f"clarifications-organizer-{language[:2]}")
    with page.expect_navigation():
        waiting.locator("button[type=submit]").click()
    assert page.locator(f"#waiting-{question.pk}").count() == 0
    answered = page.locator(f"#answered-{question.pk}")
    assert "WMMA" in answered.locator(".answer strong").inner_text()
    assert in_language(language, "Answered for everyone") in answered.inner_text()

    page.context.clear_cookies()
    log_in(page, site, "alice", "pw-alice-12345")
    assert page.locator("#clarifications-link .badge").inner_text() == "1"
    with page.expect_navigation():
        page.locator("#clarifications-link").click()
    assert page.locator(f"#mine-{question.pk}.unread .answer").count() == 1
    page.reload()
    assert page.locator("#clarifications-link .badge").count() == 0

    page.context.clear_cookies()  # a visitor
    page.goto(f"{site}/seasons/S1/clarifications/")
    public = page.locator(f"#public-{question.pk}")
    assert "tensor cores" in public.inner_text() and "WMMA" in public.inner_text()
    assert "Alice" not in page.locator("main").inner_text()
    assert page.locator("#ask a").count() == 1  # a visitor is asked to log in first
    assert page.console_errors == []
