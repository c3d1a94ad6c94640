"""In a real browser: log in, upload a bundle, and watch it being judged without reloading the page: its
stage (queued, position, compiling, checking, timing, ...) and elapsed time, then its verdict and charts,
the new submission's message gone, and the submission now awaiting an organizer's review."""
import re
import shutil

import pytest

from submissions.models import GpuType, Season
from submissions.services import accounts
from tests.browser.conftest import ARTIFACTS
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.django_db(transaction=True)

# Every text the runs table's state cells take, as the page shows them.
RECORD_STATES = """() => {
  window.__states = [];
  const record = () => document.querySelectorAll('#runs td.state').forEach(td => window.__states.push(td.innerText));
  record();
  new MutationObserver(record).observe(document.getElementById('runs'), {subtree: true, childList: true, characterData: true});
}"""
ELAPSED = re.compile(r"· (\d+:\d\d)\b")  # a running run's is followed by its limit


# In plain torch: a changed copy of the example's C++ candidate would be a build of its own (20-30 s of g++
# on CI). The sleeps keep the run in its compile stage, then in its correctness checks (its first three
# calls), long enough for the page's polls to see them.
SLOW_TO_IMPORT = """import time

import torch

time.sleep(5)  # the page shows this run compiling


class ModelNew(torch.nn.Module):
    calls = 0

    def forward(self, x):
        ModelNew.calls += 1
        if ModelNew.calls <= 3:
            time.sleep(1)  # the page shows this run checking correctness
        return torch.relu(x)
"""


@pytest.fixture
def slow_to_import_bundle(tmp_path):
    """The CPU ReLU example, whose candidate takes 5 s to import: long enough to see it compiling."""
    bundle = tmp_path / "relu-slow-import"
    shutil.copytree(EXAMPLES / "relu-cpu", bundle)
    (bundle / "cudacode.py").write_text(SLOW_TO_IMPORT)
    return sorted(bundle.iterdir())


def test_uploaded_bundle_shows_its_stages_then_its_verdict_and_charts_live(
        live_server, page, queue_prefix, start_agent, slow_to_import_bundle):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    _, agent_token = accounts.create_agent("browser-agent", GpuType.objects.all())
    agent = start_agent(live_server.url, agent_token, f"{queue_prefix}cpu")

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/submit/")
    page.select_option("select[name=season]", label=str(season))
    page.fill("input[name=new_issue_title]", "ReLU from the browser")
    page.set_input_files("input[name=files]", [str(p) for p in slow_to_import_bundle])
    page.click("button[type=submit]")
    page.wait_for_url("**/submissions/*/")
    page.evaluate(RECORD_STATES)
    assert page.locator("#runs td.state").first.inner_text().startswith(("Queued", "Running"))
    assert "its runs below show how far judging has come" in page.locator(".message.judging").inner_text()
    assert page.locator("#submission-state").inner_text() == "Submission state: Judging"
    page.evaluate("window.__marker = 'not reloaded'")
    page.screenshot(path=str(ARTIFACTS / "submission-queued.png"), full_page=True)

    page.locator("#runs td.state .stage", has_text="Compiling").wait_for(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "submission-compiling.png"), full_page=True)
    verdict = page.locator("#runs .verdict.passed")
    try:
        verdict.wait_for(timeout=240_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "submission-timeout.png"), full_page=True)
        raise AssertionError(f"no verdict on the page; agent output:\n{agent.output()}")
    page.locator("#charts [data-figure][data-drawn='1']").first.wait_for(timeout=30_000)  # drawn on arrival
    assert page.evaluate("window.__marker") == "not reloaded"
    assert page.locator("#runs table").get_attribute("data-live") == "false"
    assert page.locator(".message.judging").count() == 0 and "how far judging has come" not in page.content()
    # not the end: an organizer reviews it next
    assert page.locator("#submission-state").inner_text() == "Submission state: Passed — awaiting review"

    states = page.evaluate("window.__states")
    stages = [s.split(" · ")[1] for s in states if s.startswith("Running · ")]
    assert "Compiling" in stages and ({"Checking correctness", "Timing"} & set(stages)), states
    elapsed = {m.group(1) for s in states if (m := ELAPSED.search(s))}
    assert len(elapsed) >= 3, states  # the clock ticked while the run was judged
    page.screenshot(path=str(ARTIFACTS / "submission-passed.png"), full_page=True)
    assert page.console_errors == []
