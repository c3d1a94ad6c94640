"""In Chromium, in both languages: a contestant asks for a profile of a passed run from its submission page, and
reads the report on the profile run's page (a row per kernel, the stalls, the roofline drawn by the site's own
plotly.js, the .ncu-rep downloaded), on a 390 px phone too; another contestant is refused it.

The report is the one tests/site/test_profiles.py builds, or, with PROFILE_RESULT=file, a profile run's real
result (`python -m profiler_agent judge --mode profile --json`, as bench/judge/profile_report.sh keeps it, with
its .ncu-rep beside it). The page is saved to PROFILE_SCREENSHOT_DIR (default test-artifacts/) as
profile-<language>.png:

    PROFILE_RESULT=bench/results/profile/lb-mlp-gelu.result.json PROFILE_SCREENSHOT_DIR=docs/screenshots \\
        pytest -q tests/browser/test_profile_page.py -p no:cacheprovider
"""
import hashlib
import json
import os
from pathlib import Path

import pytest

from submissions.bundles import build_bundle
from submissions.models import GpuType, ProfileFile, Season, Submission, SubmissionMode
from submissions.services import accounts, judging, submitting
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_cancel_run import log_in
from tests.browser.test_public_pages import assert_charts_drawn
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all
from tests.site.test_profiles import NCU_REP, profiled_result

pytestmark = pytest.mark.django_db(transaction=True)
REAL_RESULT = os.environ.get("PROFILE_RESULT")
SCREENSHOTS = Path(os.environ.get("PROFILE_SCREENSHOT_DIR") or ARTIFACTS)


def reported():
    """(the profile run's result, its .ncu-rep bytes)."""
    if not REAL_RESULT:
        return profiled_result(), NCU_REP
    path = Path(REAL_RESULT)
    report_file = path.parent / f"{path.name.removesuffix('.result.json')}.ncu-rep"
    return json.loads(path.read_text()), report_file.read_bytes() if report_file.exists() else NCU_REP


@pytest.mark.parametrize("language, button, heading, candidate, verdict", [
    ("en-US", "Profile this run", "Profile of run", "candidate", "Passed"),
    ("zh-CN", "剖析此运行", "运行的性能剖析", "优化实现", "通过"),
])
def test_a_contestant_asks_for_a_profile_and_reads_its_report(live_server, page, queue_prefix, language, button,
                                                              heading, candidate, verdict):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    gpu = GpuType.objects.create(slug="h200", name="NVIDIA H200")
    season.gpu_types.add(gpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    agent, _ = accounts.create_agent("gpu-host", [gpu])
    issue = submitting.open_issue(season, alice, title="MLP with GELU")
    ranked = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    report_all(ranked, agent, passed_result(speedup=1.4))
    run = ranked.runs.get()

    log_in(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/submissions/{ranked.pk}/")
    page.locator(f"#request-profile-{run.pk} button", has_text=button).click()
    page.wait_for_url(f"{live_server.url}/submissions/*/")
    profile = Submission.objects.get(mode=SubmissionMode.PROFILE)
    assert page.url == f"{live_server.url}/submissions/{profile.pk}/"
    assert page.locator("h1 .mode-profile").count() == 1

    # the agent's part: the .ncu-rep, then the result with its report
    profile_run = profile.runs.get()
    _, secret = judging.start_run(profile_run.pk, agent, profile_run.attempts)
    result, ncu_rep = reported()
    ProfileFile.objects.create(run=profile_run, content=ncu_rep, size=len(ncu_rep),
                               sha256=hashlib.sha256(ncu_rep).hexdigest(), attempt=profile_run.attempts)
    judging.record_result(profile_run.pk, agent, secret, result)
    kernels = result["profile"]["kernels"]

    page.reload()
    page.locator(f"#run-{profile_run.pk} .profile-link a").click()
    page.wait_for_url(f"{live_server.url}/runs/{profile_run.pk}/profile/")
    assert page.locator("h1").inner_text().startswith(heading)
    assert verdict in page.locator("#profile-verdict").inner_text()
    rows = page.locator("#profile-kernels tbody tr")
    assert rows.count() == len(kernels)
    first = next(k for k in kernels if k["model"] == "candidate")
    assert rows.nth(kernels.index(first)).locator("td").first.inner_text() == candidate
    assert rows.nth(kernels.index(first)).locator("code.kernel-name").get_attribute("title") == first["name"]
    stalls = page.locator("#profile-kernels td.stalls [data-stall]")
    assert stalls.count() == sum(len(k["stalls"]) for k in kernels)
    if any(k["arithmetic_intensity"] and k["flop_per_s"] for k in kernels):
        assert_charts_drawn(page, 1)
    with page.expect_download() as download:
        page.locator("#profile-file a").click()
    assert Path(download.value.path()).read_bytes() == ncu_rep
    assert download.value.suggested_filename == f"run-{profile_run.pk}.ncu-rep"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"profile-{language[:2]}.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the table scrolls inside its box
    assert page.console_errors == []

    page.context.clear_cookies()
    log_in(page, live_server.url, "bob", "pw-bob-12345")
    assert page.goto(f"{live_server.url}/runs/{profile_run.pk}/profile/").status == 404
    assert page.goto(f"{live_server.url}/submissions/{ranked.pk}/").ok
    assert page.locator(f"#request-profile-{run.pk}").count() == 0
