"""A submission judged after its season's scoreboard froze, in Chromium, in both languages: a visitor
reads "result hidden until the thaw" on each run and no verdict, figure or chart; its owner, signed in,
reads the result."""
import pytest
from django.utils import timezone

from leaderboard.services import freeze_scoreboard
from submissions.bundles import build_bundle
from submissions.models import GpuType, Run, Season
from submissions.services import accounts, submitting
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in
from tests.judged_data import accepted_sample, mark_passed
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)

HIDDEN = {"en-US": "Result hidden until the thaw", "zh-CN": "结果封榜中，解封后公布"}


@pytest.fixture
def judged_after_the_freeze(queue_prefix):
    """Alice's first version accepted before the freeze; her second judged at 9.0x after it."""
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    season.gpu_types.add(GpuType.objects.create(slug="h100", name="NVIDIA H100"),
                         GpuType.objects.create(slug="c500", name="MetaX C500"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    first = accepted_sample(season, alice, organizer, {"h100": (3.1, 0.021), "c500": (2.4, 0.034)}, title="GELU")
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    second = submitting.create_submission(alice, first.issue, build_bundle(dict(valid_files(), **{"readme.md": b"v2"})))
    for slug in ("h100", "c500"):
        mark_passed(second, slug, 9.0, 0.01)
    Run.objects.filter(submission=second).update(finished_at=timezone.now())
    return second


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_visitor_reads_result_hidden_until_the_thaw_and_the_owner_reads_the_result(
        live_server, page, judged_after_the_freeze, language):
    site, submission = live_server.url, judged_after_the_freeze
    page.goto(f"{site}/submissions/{submission.pk}/")
    hidden = page.locator("#runs .hidden-until-thaw")
    assert hidden.count() == 2 and {hidden.nth(i).inner_text() for i in range(2)} == {HIDDEN[language]}
    runs = page.locator("#runs").inner_text()
    assert "9.00×" not in runs and "NVIDIA H100" in runs  # the GPU shows, the result does not
    assert page.locator("#charts [data-figure]").count() == 0
    shoot(page, f"frozen-submission-visitor-{language[:2]}")

    log_in(page, site, "alice", "pw-alice-12345")
    page.goto(f"{site}/submissions/{submission.pk}/")
    assert page.locator("#runs .hidden-until-thaw").count() == 0
    assert page.locator("#runs").inner_text().count("9.00×") == 4  # each run's speedup and its ranked figure
    assert page.locator("#charts [data-figure]").count() > 0
    shoot(page, f"frozen-submission-owner-{language[:2]}")
    assert page.console_errors == []
