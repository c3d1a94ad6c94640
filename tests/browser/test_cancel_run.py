"""In Chromium, in both languages: a contestant sees a run of their burst waiting with how many of their
runs go first; an organizer cancels a queued run from the review page with a reason."""
import pytest

from submissions import queueing
from submissions.bundles import build_bundle
from submissions.models import AuditEntry, GpuType, Run, RunStatus, Season
from submissions.services import accounts, submitting
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)


def log_in(page, site, username, password):
    page.goto(f"{site}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


@pytest.mark.parametrize("language, waiting_text, button, cancelled", [
    ("en-US", "Waiting (1 of your runs ahead)", "Cancel this run", "Cancelled"),
    ("zh-CN", "等待中 (前面还有您的 1 个运行)", "取消此运行", "已取消"),
])
def test_a_waiting_run_is_explained_and_an_organizer_cancels_a_queued_one(
        live_server, page, queue_prefix, settings, language, waiting_text, button, cancelled):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 1
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    issue = submitting.open_issue(season, alice, title="ReLU")
    queued, waiting = (submitting.create_submission(alice, issue, build_bundle(valid_files())) for _ in range(2))
    queued_run, waiting_run = queued.runs.get(), waiting.runs.get()

    log_in(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/submissions/{waiting.pk}/")
    state, waited = page.locator(f"#run-{waiting_run.pk} td.state").inner_text().split(" · ")
    assert state == waiting_text and waited.startswith("0:")  # then the time it has waited

    page.context.clear_cookies()
    log_in(page, live_server.url, "organizer", "pw-organizer-1")
    page.goto(f"{live_server.url}/organizer/submissions/{queued.pk}/")
    form = page.locator(f"#cancel-run-{queued_run.pk}")
    form.locator("input[name=reason]").fill("uploaded twice")
    form.locator("button", has_text=button).click()
    page.wait_for_load_state()
    assert cancelled in page.locator("#metrics").inner_text()
    assert page.locator(f"#cancel-run-{queued_run.pk}").count() == 0  # nothing left to cancel
    assert page.console_errors == []

    queued_run.refresh_from_db()
    assert queued_run.verdict == "cancelled"
    assert AuditEntry.objects.get(action="run.cancelled").reason == "uploaded twice"
    assert queueing.judging_queue(cpu.queue_name).get_job_ids() == [Run.objects.get(pk=waiting_run.pk).rq_job_id]
    assert Run.objects.get(pk=waiting_run.pk).status == RunStatus.QUEUED  # released into the freed slot
