"""In Chromium: a contestant picks a submission's mode on the submit page; the test submission's page
carries its badge and says what a test is, its lists mark it, and another contestant is refused it."""
import pytest

from submissions.models import GpuType, Season, Submission, SubmissionMode
from submissions.services import accounts, submitting
from tests.browser.test_cancel_run import log_in
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_test_submission_is_chosen_on_the_submit_page_and_seen_by_its_owner_alone(live_server, page, queue_prefix,
                                                                                   tmp_path):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    issue = submitting.open_issue(season, alice, title="ReLU")
    paths = []
    for name, data in valid_files().items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))

    log_in(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/submit/?issue={issue.code}")
    mode = page.locator("select[name=mode]")
    assert mode.input_value() == "ranked"  # the default
    assert mode.locator("option").all_inner_texts() == ["Ranked", "Test", "Benchmark", "Profile"]
    mode.select_option("test")
    page.set_input_files("input[name=files]", paths)
    page.click("form.stacked button[type=submit]")
    page.wait_for_url(f"{live_server.url}/submissions/*/")
    submission = Submission.objects.get()
    assert submission.mode == SubmissionMode.TEST
    assert page.locator("h1 .mode-test").inner_text() == "Test"
    assert "check correctness only" in page.locator(".mode-note").inner_text()
    page.goto(f"{live_server.url}/issues/{issue.code}/")
    assert page.locator(".mode-test").count() == 1
    assert page.console_errors == []

    page.context.clear_cookies()
    log_in(page, live_server.url, "bob", "pw-bob-12345")
    answer = page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    assert answer.status == 404
    page.goto(f"{live_server.url}/issues/{issue.code}/")
    assert page.locator(".mode-test").count() == 0
