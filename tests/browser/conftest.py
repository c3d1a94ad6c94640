import os
import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from clarifications import services as clarifications
from submissions.bundles import build_bundle
from submissions.models import AgentWorker, GpuType, RejudgeScope, Season
from submissions.services import accounts, rejudging, submitting
from tests.judged_data import accepted_sample
from tests.site.bundle_files import valid_files

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def chromium_path():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("Chromium is not installed: `apt-get install chromium` (.ci/run does it)")


# Whether Chromium has a font for Chinese: without one every character is the same empty box (the walk
# of issue 12 took its Chinese screenshots on such a machine). Two characters and an unassigned code
# point are drawn; with a font, each differs.
DRAWS_CHINESE = """() => {
  const canvas = document.createElement('canvas'); canvas.width = canvas.height = 48;
  const g = canvas.getContext('2d');
  const pixels = text => { g.clearRect(0, 0, 48, 48); g.font = '40px sans-serif'; g.fillText(text, 2, 40);
                           return g.getImageData(0, 0, 48, 48).data.join(','); };
  const pai = pixels('排');
  return pai !== pixels('行') && pai !== pixels('\\u0378');
}"""
CJK_FONT_HINT = "Chromium has no font for Chinese: install one (apt-get install fonts-wqy-microhei; .ci/run does)"


def draws_chinese(page):
    return page.evaluate(DRAWS_CHINESE)


@pytest.fixture(scope="package")
def chromium():
    """One Chromium for the browser tests of a test process (starting one took a second or two a test);
    each test still gets a fresh context of its own: no cookies, storage or cache carried over."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(request, chromium):
    """A fresh page in a fresh browser context; a test parametrized with `language` gets that browser locale."""
    params = getattr(request.node, "callspec", None)
    locale = params.params.get("language", "en-US") if params else "en-US"
    ARTIFACTS.mkdir(exist_ok=True)
    context = chromium.new_context(locale=locale)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    yield page
    for other in chromium.contexts:  # the test's own, and any it opened besides (test_every_page's no-JS one)
        other.close()


@pytest.fixture
def every_page(queue_prefix):
    """A season with results, issues, a running submission, a rejudge and a worker; the pages that
    show them, as (visitor pages, organizer pages)."""
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    h100 = GpuType.objects.create(slug="h100", name="NVIDIA H100")
    c500 = GpuType.objects.create(slug="c500", name="MetaX C500")
    season.gpu_types.add(h100, c500)
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True,
                                             display_name="Organizer of the contest")
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice",
                                         affiliation="Tsinghua University")
    bob = accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob", affiliation="Zhejiang University")
    sample = accepted_sample(season, alice, organizer, {"h100": (3.1, 0.021), "c500": (2.4, 0.034)},
                             title="Fused GELU with a rather long title for a narrow screen")
    accepted_sample(season, bob, organizer, {"h100": (5.2, 1.2)}, title="RMSNorm")
    issue = submitting.open_issue(season, bob, title="Softmax", operator="torch.softmax")
    pending = submitting.create_submission(bob, issue, build_bundle(valid_files()))
    batch = rejudging.rejudge(RejudgeScope.SUBMISSION, sample, organizer.user, "new harness")
    agent, _ = accounts.create_agent("gpu-host-1", [h100])
    AgentWorker.objects.create(agent=agent, name="gpu-host-1-gpu0", gpu_index=0, gpu_model="NVIDIA H100",
                               gpu_uuid="GPU-0123456789abcdef", memory_bytes=80 * 2**30, harness_version="1.2",
                               last_heartbeat_at=timezone.now())
    # a question waiting for an answer, one answered for everyone, an announcement
    clarifications.ask(season, alice.user, "May the kernel use tensor cores?")
    answered = clarifications.ask(season, bob.user, "Do warm-up runs count?\nIn the timing, I mean.")
    clarifications.answer(answered, organizer.user, "No: they are **discarded**.", public=True, reason="for everyone")
    clarifications.post_announcement(season, organizer.user, "Judging on the H100 resumes.", reason="the fleet is back")
    visitor = ["/", "/seasons/S1/", "/seasons/S1/leaderboard/", "/seasons/S1/hardware/", "/seasons/S1/gpus/h100/",
               f"/contestants/{alice.pk}/", "/issues/", f"/issues/{sample.issue.code}/", f"/submissions/{sample.pk}/",
               f"/submissions/{pending.pk}/", "/accounts/login/", "/accounts/register/", "/accounts/password_reset/",
               "/accounts/password_reset/done/", "/accounts/reset/done/", "/accounts/reset/MQ/bad-token/",
               "/seasons/S1/clarifications/"]
    organizer_pages = ["/organizer/clarifications/",
                       "/issues/new/", "/submit/", "/submit/pull-request/", "/account/", "/account/agreement/",
                       "/organizer/", f"/organizer/submissions/{sample.pk}/", f"/organizer/submissions/{pending.pk}/",
                       "/organizer/fleet/", f"/organizer/rejudges/{batch.pk}/", "/organizer/seasons/S1/dataset/",
                       "/organizer/seasons/", "/organizer/seasons/S1/settings/",
                       "/organizer/seasons/S1/final-system-test/"]
    return {"visitor": visitor, "organizer": organizer_pages, "organizer_user": organizer.user}


@pytest.fixture
def season_with_results(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    h100 = GpuType.objects.create(slug="h100", name="NVIDIA H100")
    c500 = GpuType.objects.create(slug="c500", name="MetaX C500")
    season.gpu_types.add(h100, c500)
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    people = [accounts.register_contestant(u, f"pw-{u}-12345", display_name=d, affiliation=a) for u, d, a in (
        ("alice", "Alice", "Tsinghua University"), ("bob", "Bob", "Zhejiang University"),
        ("carol", "Carol", "Peking University"))]
    samples = [
        accepted_sample(season, people[0], organizer, {"h100": (3.1, 0.021), "c500": (2.4, 0.034)}, title="Fused GELU"),
        accepted_sample(season, people[0], organizer, {"h100": (1.8, 0.41), "c500": (1.5, 0.62)}, title="Softmax"),
        accepted_sample(season, people[1], organizer, {"h100": (5.2, 1.2), "c500": (3.9, 2.1)}, title="RMSNorm"),
        accepted_sample(season, people[2], organizer, {"h100": (1.1, 0.09)}, title="ReLU"),
    ]
    return season, samples
