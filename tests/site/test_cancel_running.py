"""An organizer cancels a run an agent is judging (docs/organizers.md, "Rejudge and cancel"): from the
review page or the fleet page, with a reason, audited; the run is `cancelled` at once; the agent's next
heartbeat is told to stop that attempt (`stop_judging`), and whatever that attempt reports later is
refused as a late report, kept as evidence, and changes nothing. tests/e2e/test_cancel_running.py does
it with a real agent whose bundle never returns."""
import pytest

from submissions import agent_protocol
from submissions.models import AgentWorker, AuditEntry, GpuType, Run, RunStatus, Season, Standing, Verdict
from submissions.services import accounts, cancelling, fleet, judging, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import PASSED, passed_result, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def cpu_season(db):
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(cpu)
    return season


@pytest.fixture
def agent(cpu_season):
    return accounts.create_agent("cancel-agent", GpuType.objects.all())


def running_run(capture, contestant, season, agent, title="hangs", worker="cancel-agent-cpu0"):
    """A run of a new submission, started on the agent's worker as the API's start does; (run, secret)."""
    issue = submitting.open_issue(season, contestant, title=title)
    run = submit(capture, contestant, issue, valid_files()).runs.get()
    fleet.record_heartbeat(agent, {"name": worker})
    run, secret = fleet.start_on_worker(run.pk, agent, run.attempts, worker_name=worker)
    return run, secret


def heartbeat(client, token, judging, worker="cancel-agent-cpu0"):
    response = client.post("/api/v1/agent/heartbeat", {"worker": {"name": worker}, "judging": judging},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    return response.json()


def test_an_organizer_cancels_a_running_run_from_the_review_page(cpu_season, alice, organizer, agent, client,
                                                                django_capture_on_commit_callbacks):
    agent, token = agent
    run, secret = running_run(django_capture_on_commit_callbacks, alice, cpu_season, agent)
    other, _ = running_run(django_capture_on_commit_callbacks, alice, cpu_season, agent, title="other",
                           worker="cancel-agent-cpu1")
    client.force_login(organizer.user)
    page = client.get(f"/organizer/submissions/{run.submission_id}/").content.decode()
    assert f'id="cancel-run-{run.pk}"' in page and "Stop and cancel this run" in page

    response = client.post(f"/organizer/runs/{run.pk}/cancel/", {"reason": "forward never returns"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/organizer/submissions/{run.submission_id}/"
    assert (f"Run #{run.pk} is cancelled; its agent is told to stop judging it at its next heartbeat."
            in response.content.decode())
    run.refresh_from_db()
    assert (run.status, run.verdict, run.job_secret_hash, run.stage) == (RunStatus.DONE, Verdict.CANCELLED, "", "")
    assert run.finished_at is not None and run.agent_id == agent.pk  # the agent that is told to stop
    entry = AuditEntry.objects.get(action="run.cancelled", object_id=str(run.pk))
    assert (entry.actor, entry.reason) == (organizer.user, "forward never returns")
    assert entry.before["status"] == "running" and entry.before["agent"] == "cancel-agent"
    assert entry.before["worker"] == "cancel-agent-cpu0" and entry.before["started_at"]
    assert entry.after == {"status": "done", "verdict": "cancelled", "agent_told_to_stop": True}
    assert AgentWorker.objects.get(name="cancel-agent-cpu0").current_run is None
    assert f'id="cancel-run-{run.pk}"' not in client.get(f"/organizer/submissions/{run.submission_id}/").content.decode()

    # The heartbeat that names the attempt is told to stop it, and only it (the other run goes on).
    answer = heartbeat(client, token, [{"run_id": run.pk, "attempt": run.attempts},
                                       {"run_id": other.pk, "attempt": other.attempts}])
    assert answer[agent_protocol.STOP_JUDGING] == [{"run_id": run.pk, "attempt": run.attempts}]
    assert heartbeat(client, token, [{"run_id": other.pk, "attempt": other.attempts}],
                     worker="cancel-agent-cpu1")["stop_judging"] == []
    assert heartbeat(client, token, [])["stop_judging"] == []
    other.refresh_from_db()
    assert other.status == RunStatus.RUNNING

    # Another agent naming that attempt is told nothing: the order is for the agent that judges it.
    _, stranger_token = accounts.create_agent("stranger", GpuType.objects.all())
    assert heartbeat(client, stranger_token, [{"run_id": run.pk, "attempt": run.attempts}],
                     worker="stranger-cpu0")["stop_judging"] == []


def test_what_the_cancelled_attempt_reports_later_is_refused_kept_and_changes_nothing(
        cpu_season, alice, organizer, agent, client, django_capture_on_commit_callbacks):
    """An agent too old to know `stop_judging` judges to the end: its bundle fetch, progress and result
    are refused (409), the result kept in the audit trail as a late report, the verdict cancelled."""
    agent, token = agent
    run, secret = running_run(django_capture_on_commit_callbacks, alice, cpu_season, agent)
    cancelling.cancel_run(run.pk, organizer.user, "hangs")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", "HTTP_X_JOB_SECRET": secret}

    bundle = client.get(f"/api/v1/agent/runs/{run.pk}/bundle", **headers)
    assert bundle.status_code == 409 and "was cancelled while it was judged" in bundle.json()["detail"]
    progress = client.post(f"/api/v1/agent/runs/{run.pk}/progress", {"attempt": run.attempts, "stage": "timing"},
                           content_type="application/json", **headers)
    assert progress.status_code == 409
    late = client.post(f"/api/v1/agent/runs/{run.pk}/result", passed_result(speedup=9.0),
                       content_type="application/json", **headers)
    assert late.status_code == 409, late.content
    assert f"run {run.pk}: attempt 1 was cancelled while it was judged" in late.json()["detail"]

    run.refresh_from_db()
    assert (run.status, run.verdict, run.speedup, run.result, run.stage) == (RunStatus.DONE, Verdict.CANCELLED,
                                                                            None, None, "")
    entry = AuditEntry.objects.get(action="run.late_report", object_id=str(run.pk))
    assert entry.actor_label == "agent:cancel-agent"
    assert entry.after["result"]["status"] == "passed" and entry.after["result"]["timing"]["speedup"] == 9.0
    assert "was cancelled while it was judged" in entry.reason
    assert not AuditEntry.objects.filter(action="run.verdict", object_id=str(run.pk)).exists()
    assert not Standing.objects.filter(contestant=alice, best_speedup__isnull=False).exists()
    with pytest.raises(judging.LateReport):
        judging.record_result(run.pk, agent, secret, dict(PASSED))


def test_the_fleet_page_cancels_the_run_a_worker_judges(cpu_season, alice, organizer, agent, client,
                                                       django_capture_on_commit_callbacks):
    agent, _ = agent
    run, _ = running_run(django_capture_on_commit_callbacks, alice, cpu_season, agent)
    fleet.record_heartbeat(agent, {"name": "cancel-agent-cpu0", "current_run": run.pk})
    client.force_login(organizer.user)
    page = client.get("/organizer/fleet/").content.decode()
    row = page[page.index('id="worker-'):]
    assert f'id="cancel-run-{run.pk}"' in row and f'action="/organizer/runs/{run.pk}/cancel/"' in row
    assert 'name="back" value="fleet"' in row

    response = client.post(f"/organizer/runs/{run.pk}/cancel/", {"reason": "stuck for ten minutes", "back": "fleet"})
    assert response.status_code == 302 and response["Location"] == "/organizer/fleet/"
    page = client.get("/organizer/fleet/").content.decode()
    assert f"Run #{run.pk} is cancelled" in page and f'id="cancel-run-{run.pk}"' not in page
    twin = client.get("/organizer/fleet.json").json()["workers"][0]
    assert (twin["state"], twin["judging_run"], twin["judged_last_hour"]) == ("idle", None, 0)  # stopped, not judged
    assert Run.objects.get(pk=run.pk).verdict == Verdict.CANCELLED
    entry = AuditEntry.objects.get(action="run.cancelled", object_id=str(run.pk))
    assert (entry.actor, entry.reason) == (organizer.user, "stuck for ten minutes")


def test_a_running_run_needs_a_reason_and_a_finished_one_is_refused(cpu_season, alice, organizer, agent, client,
                                                                   django_capture_on_commit_callbacks):
    agent, _ = agent
    run, secret = running_run(django_capture_on_commit_callbacks, alice, cpu_season, agent)
    client.force_login(organizer.user)
    url = f"/organizer/runs/{run.pk}/cancel/"
    response = client.post(url, {"reason": "   "}, follow=True)
    assert "cancelling a run needs a reason" in response.content.decode()
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.job_secret_hash
    assert not AuditEntry.objects.filter(action="run.cancelled").exists()

    judging.record_result(run.pk, agent, secret, passed_result())  # it finished after all
    page = client.get(f"/organizer/submissions/{run.submission_id}/").content.decode()
    assert f'id="cancel-run-{run.pk}"' not in page
    response = client.post(url, {"reason": "too late"}, follow=True)
    assert f"run #{run.pk} is already finished (Passed)" in response.content.decode()
    run.refresh_from_db()
    assert (run.status, run.verdict) == (RunStatus.DONE, Verdict.PASSED)
    assert not AuditEntry.objects.filter(action="run.cancelled").exists()
    with pytest.raises(cancelling.CancelRefused, match="already finished"):
        cancelling.cancel_run(run.pk, organizer.user, "too late")


def test_a_contestant_still_cannot_cancel_a_run_being_judged(cpu_season, alice, agent,
                                                            django_capture_on_commit_callbacks):
    run, _ = running_run(django_capture_on_commit_callbacks, alice, cpu_season, agent[0])
    with pytest.raises(cancelling.CancelRefused, match="being judged by an agent"):
        cancelling.cancel_own_run(run.pk, alice.user, "mine")
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
