"""In a real browser: log in, upload a bundle, and watch its verdict arrive without reloading the page."""
import pytest

from submissions.models import GpuType, Season
from submissions.services import accounts
from tests.browser.conftest import ARTIFACTS
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.django_db(transaction=True)


def test_uploaded_bundle_gets_its_verdict_live(live_server, page, queue_prefix, start_agent):
    season = Season.objects.create(code="S1", name="Season one")
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
    page.set_input_files("input[name=files]", [str(p) for p in sorted((EXAMPLES / "relu-cpu").iterdir())])
    page.click("button[type=submit]")
    page.wait_for_url("**/submissions/*/")
    assert page.locator("#runs td.state").first.inner_text().startswith(("Queued", "Running"))
    page.evaluate("window.__marker = 'not reloaded'")
    page.screenshot(path=str(ARTIFACTS / "submission-queued.png"), full_page=True)

    verdict = page.locator("#runs .verdict.passed")
    try:
        verdict.wait_for(timeout=240_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "submission-timeout.png"), full_page=True)
        raise AssertionError(f"no verdict on the page; agent output:\n{agent.output()}")
    assert page.evaluate("window.__marker") == "not reloaded"
    assert page.locator("#runs table").get_attribute("data-live") == "false"
    page.screenshot(path=str(ARTIFACTS / "submission-passed.png"), full_page=True)
    assert page.console_errors == []
