"""The season settings page in Chromium, in both languages: an organizer (not a superuser: no Admin
link) reaches it from the header, picks the dataset's weight rule in its form (only the chosen rule's
fields show), sees a refused row's error next to it, saves, and freezes the scoreboard. Screenshots:
season-settings-en.png, season-settings-zh.png (see test_public_pages)."""
import pytest

from leaderboard.models import ScoreboardFreeze
from submissions.models import AuditEntry, GpuType, Season
from submissions.services import accounts
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in

pytestmark = pytest.mark.django_db(transaction=True)

SEASONS = {"en-US": "Seasons", "zh-CN": "赛季"}


@pytest.fixture
def season(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    return season


def save(page, form):
    with page.expect_navigation():
        page.locator(f"{form} button").last.click()


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_organizer_sets_the_weight_rule_and_freezes_the_board(live_server, page, season, language):
    site = live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    assert page.locator("#admin-link").count() == 0  # Django's admin would only say "no permission"
    with page.expect_navigation():
        page.locator("header nav a", has_text=SEASONS[language]).click()
    with page.expect_navigation():
        page.locator("#season-S1 a.settings-link").click()
    assert page.url == f"{site}/organizer/seasons/S1/settings/"
    assert page.locator("html").get_attribute("lang") == ("en" if language == "en-US" else "zh-hans")

    form = "#weights-form"
    # uniform takes no table: no rule's fieldset shows until another rule is chosen
    assert not page.locator("#weights-settings-level").is_visible()
    page.select_option(f"{form} select[name=weights-rule]", "operator")
    assert page.locator("#weights-settings-operator").is_visible()
    assert not page.locator("#weights-settings-level").is_visible()
    page.fill("input[name=weights-operator-key-0]", "ReLU")
    page.fill("input[name=weights-operator-weight-0]", "2")
    page.fill("input[name=weights-operator-key-1]", " relu ")
    page.fill("input[name=weights-operator-weight-1]", "3")
    page.fill("input[name=weights-reason]", "operators by rarity")
    save(page, form)
    # refused, the error beside the row at fault, what was typed kept and its rule's fields still shown
    row = page.locator("#weights-settings-operator tbody tr").nth(1)
    assert "relu" in row.locator(".errorlist").inner_text()
    assert page.input_value("input[name=weights-operator-key-1]") == " relu "
    assert page.locator("#weights-settings-operator").is_visible()
    assert Season.objects.get(pk=season.pk).dataset_weight_rule == "uniform"
    assert page.console_errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.console_errors.clear()  # the refusal's own status, as it should be

    page.select_option(f"{form} select[name=weights-rule]", "level")
    assert page.locator("#weights-settings-level").is_visible()
    assert not page.locator("#weights-settings-operator").is_visible()
    page.fill("input[name=weights-level-3]", "5")
    page.fill("input[name=weights-default]", "0.5")
    page.fill("input[name=weights-reason]", "fused kernels count more")
    save(page, form)
    assert page.url.endswith("/organizer/seasons/S1/settings/#weights")
    assert page.locator(".message.success").count() == 1
    stored = Season.objects.get(pk=season.pk)
    assert (stored.dataset_weight_rule, stored.dataset_weight_settings) == (
        "level", {"default": 0.5, "weights": {"3": 5.0}, "samples": {}})
    assert page.input_value("input[name=weights-level-3]") == "5.0"
    assert AuditEntry.objects.get(action="season.weights_changed").reason == "fused kernels count more"

    page.fill("#freeze-form input[name=freeze-reason]", "the last hour")
    with page.expect_navigation():
        page.locator("#freeze-form button[value=freeze]").click()
    assert ScoreboardFreeze.objects.filter(season=season).exists()
    assert page.locator("#freeze-form button[value=thaw]").count() == 1
    assert "organizer" in page.locator("#freeze-state").inner_text()
    assert AuditEntry.objects.get(action="scoreboard.frozen").reason == "the last hour"
    history = page.locator("#season-history").inner_text()
    assert "scoreboard.frozen" in history and "season.weights_changed" in history
    shoot(page, f"season-settings-{language[:2]}")
    assert page.console_errors == []
