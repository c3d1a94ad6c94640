"""The submit page in Chromium, in both languages, for a contestant an invite-only season has not
admitted: its refusal links the season's join page (it named the path as text to be copied), and the
link's code box takes them in. A banned contestant gets no such link: a code does not lift a ban."""
import pytest

from submissions.models import GpuType, Season
from submissions.services import accounts, season_access
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

LINK = {"en-US": "Enter an invite code", "zh-CN": "输入邀请码"}


@pytest.fixture
def invite_only_season(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one", admission="invite_only")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    accounts.register_contestant("dana", "pw-dana-12345", display_name="Dana")
    mallory = accounts.register_contestant("mallory", "pw-mallory-12345", display_name="Mallory")
    season_access.ban(season, mallory, actor=organizer.user, reason="a copied kernel")
    [invite] = season_access.create_invites(season, actor=organizer.user, reason="for Dana", count=1, max_uses=1)
    return invite.code


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_the_submit_pages_refusal_links_the_join_page(live_server, page, invite_only_season, language):
    site = live_server.url
    log_in(page, site, "dana", "pw-dana-12345")
    page.goto(f"{site}/submit/")
    refusal = page.locator(".access-refusal[data-season=S1]")
    link = refusal.locator("a.season-join-link")
    assert link.inner_text() == LINK[language]
    with page.expect_navigation():
        link.click()
    assert page.url == f"{site}/seasons/S1/join/"
    page.fill("input[name=code]", invite_only_season)
    with page.expect_navigation():
        page.click("form:has(input[name=code]) button")
    page.goto(f"{site}/submit/")
    assert page.locator(".access-refusal[data-season=S1]").count() == 0  # admitted now
    assert not page.console_errors

    page.context.clear_cookies()
    log_in(page, site, "mallory", "pw-mallory-12345")
    page.goto(f"{site}/submit/")
    assert "a copied kernel" in page.locator(".access-refusal[data-season=S1]").inner_text()
    assert page.locator(".access-refusal[data-season=S1] a.season-join-link").count() == 0
