"""In Chromium: an organizer stops a run that a worker judges, from the fleet page (the worker's row) and
from the review page (the run's row), with a reason; the run is cancelled at once and the worker shows
idle. Screenshot: fleet-cancel-running-en.png (see test_public_pages). tests/e2e/test_cancel_running.py
does it with a real agent."""
import pytest

from submissions.bundles import build_bundle
from submissions.models import AuditEntry, GpuType, RunStatus, Season, Verdict
from submissions.services import accounts, fleet, submitting
from tests.browser.test_cancel_run import log_in
from tests.browser.test_public_pages import shoot
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)


def judged_now(season, contestant, agent, title, worker):
    issue = submitting.open_issue(season, contestant, title=title)
    run = submitting.create_submission(contestant, issue, build_bundle(valid_files())).runs.get()
    fleet.record_heartbeat(agent, {"name": worker})
    run, _ = fleet.start_on_worker(run.pk, agent, run.attempts, worker_name=worker)
    return run


def test_an_organizer_stops_a_running_run_from_the_fleet_page_and_the_review_page(live_server, page, queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    agent, _ = accounts.create_agent("cpu-host-1", [cpu])
    on_fleet = judged_now(season, alice, agent, "hangs", "cpu-host-1-cpu0")
    on_review = judged_now(season, alice, agent, "hangs too", "cpu-host-1-cpu1")

    log_in(page, live_server.url, "organizer", "pw-organizer-1")
    page.goto(f"{live_server.url}/organizer/fleet/")
    row = page.locator(f"#worker-{on_fleet.worker_id}")
    assert row.locator("td.state").inner_text().startswith("judging")
    form = row.locator(f"#cancel-run-{on_fleet.pk}")
    form.locator("input[name=reason]").fill("its forward never returns")
    form.locator("button", has_text="Stop and cancel this run").click()
    page.wait_for_load_state()
    assert page.url == f"{live_server.url}/organizer/fleet/"
    assert f"Run #{on_fleet.pk} is cancelled; its agent is told to stop" in page.locator(".message.success").inner_text()
    assert page.locator(f"#worker-{on_fleet.worker_id} td.state").inner_text().strip() == "idle"
    assert page.locator(f"#cancel-run-{on_review.pk}").count() == 1  # the other worker still judges
    shoot(page, "fleet-cancel-running-en")

    page.goto(f"{live_server.url}/organizer/submissions/{on_review.submission_id}/")
    form = page.locator(f"#cancel-run-{on_review.pk}")
    form.locator("button").click()  # no reason: the browser refuses, nothing is sent
    assert page.url.endswith(f"/organizer/submissions/{on_review.submission_id}/")
    on_review.refresh_from_db()
    assert on_review.status == RunStatus.RUNNING
    form.locator("input[name=reason]").fill("stuck")
    form.locator("button", has_text="Stop and cancel this run").click()
    page.wait_for_load_state()
    assert f"Run #{on_review.pk} is cancelled" in page.locator(".message.success").inner_text()
    assert page.locator(f"#cancel-run-{on_review.pk}").count() == 0
    assert page.console_errors == []

    for run, reason in ((on_fleet, "its forward never returns"), (on_review, "stuck")):
        run.refresh_from_db()
        assert (run.status, run.verdict) == (RunStatus.DONE, Verdict.CANCELLED)
        entry = AuditEntry.objects.get(action="run.cancelled", object_id=str(run.pk))
        assert (entry.actor_label, entry.reason, entry.before["status"]) == ("organizer", reason, "running")
