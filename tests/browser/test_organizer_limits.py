"""In Chromium, in both languages: a season's submission limits and an invite code's use limit have a
ceiling. Typed past it, the browser's own check stops the form (the field's `max`); posted anyway, the
site refuses it next to the field and stores nothing. A limit of 3,000,000,000 was saved on SQLite and
failed on PostgreSQL's integer column (a server error) for invite codes."""
import pytest

from submissions.models import AuditEntry, GpuType, InviteCode, Season
from submissions.services import accounts
from submissions.services.season_access import MAX_USES_PER_INVITE
from submissions.services.season_settings import MAX_SUBMISSION_LIMIT
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

HUGE = "3000000000"
AT_MOST = {"en-US": f"less than or equal to {MAX_SUBMISSION_LIMIT}", "zh-CN": f"小于或等于{MAX_SUBMISSION_LIMIT}"}


@pytest.fixture
def season(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    return season


def post_past_the_browsers_check(page, form, fields):
    """Fill `fields` and post the form with the browser's own validation off, as a script or an old
    browser would."""
    page.evaluate("f => document.querySelector(f).noValidate = true", form)
    for name, value in fields.items():
        page.fill(f"{form} [name={name}]", value)
    with page.expect_navigation():
        page.locator(f"{form} button").last.click()


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_submission_limit_past_the_ceiling_is_refused_next_to_its_field(live_server, page, season, language):
    site = live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/seasons/S1/settings/")
    field = "#schedule-form [name=schedule-max_submissions_per_hour]"
    assert page.locator(field).get_attribute("max") == str(MAX_SUBMISSION_LIMIT)

    post_past_the_browsers_check(page, "#schedule-form", {
        "schedule-max_submissions_per_hour": HUGE, "schedule-reason": "最多 — no limit at all"})
    error = page.locator(field).locator("xpath=ancestor::div[contains(@class,'field')][1]").locator(".errorlist")
    assert AT_MOST[language] in error.inner_text().replace(",", "")
    stored = Season.objects.get(pk=season.pk)
    assert stored.max_submissions_per_hour is None
    assert not AuditEntry.objects.filter(object_type="season").exists()


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_invite_codes_use_limit_past_the_ceiling_is_refused_and_no_code_is_made(
        live_server, page, season, language):
    site = live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/seasons/S1/access/")
    assert page.locator("#invite-form [name=max_uses]").get_attribute("max") == str(MAX_USES_PER_INVITE)

    post_past_the_browsers_check(page, "#invite-form", {"max_uses": HUGE, "reason": "workshop"})
    assert AT_MOST[language].replace(str(MAX_SUBMISSION_LIMIT), str(MAX_USES_PER_INVITE)) in (
        page.locator("#invite-error").inner_text().replace(",", ""))
    assert not InviteCode.objects.exists()
