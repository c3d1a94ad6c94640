"""A contestant cancels their own run that no agent has started, from the submission page or the API:
it ends as `cancelled`, its job leaves Redis, their next waiting run takes its place in the queue, and
the audit trail names them (and their reason, if they gave one). Another's run, a run being judged or
finished, and a run the organizers queued (a rejudge) are refused with a message saying why, and
nothing changes. Django's test client, real database and Redis."""
import pytest

from submissions import queueing
from submissions.models import AuditEntry, RejudgeScope, Run, RunStatus, Verdict
from submissions.services import accounts, judging, rejudging, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit

EN = {"Accept-Language": "en"}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def cancel_by_api(client, run, token, body=None):
    return client.post(f"/api/v1/runs/{run.pk}/cancel", body or {}, content_type="application/json",
                       headers=bearer(token))


def messages_of(response):
    return [str(m) for m in response.context["messages"]]


@pytest.fixture
def alices(season, alice, django_capture_on_commit_callbacks):
    """Alice's submission, its two runs (cpu, c500) queued in Redis."""
    return submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                  valid_files())


def test_a_contestant_cancels_their_own_queued_run_from_its_page(client, alice, alices,
                                                                  django_capture_on_commit_callbacks):
    cpu, c500 = alices.runs.get(gpu_type__slug="cpu"), alices.runs.get(gpu_type__slug="c500")
    assert cpu.rq_job_id in queueing.waiting_job_ids(cpu.queue_name)
    client.force_login(alice.user)
    page = client.get(f"/submissions/{alices.pk}/", headers=EN).content.decode()
    assert f'id="cancel-own-run-{cpu.pk}"' in page and f'id="cancel-own-run-{c500.pk}"' in page

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/runs/{cpu.pk}/cancel/", {"reason": "  uploaded the wrong file "}, headers=EN,
                             follow=True)
    assert answer.redirect_chain == [(f"/submissions/{alices.pk}/", 302)]
    assert messages_of(answer) == [f"Run #{cpu.pk} is cancelled."]
    cpu.refresh_from_db()
    assert (cpu.status, cpu.verdict) == (RunStatus.DONE, Verdict.CANCELLED) and cpu.finished_at is not None
    assert cpu.rq_job_id not in queueing.waiting_job_ids(cpu.queue_name)  # no agent will take it
    assert Run.objects.get(pk=c500.pk).status == RunStatus.QUEUED  # the other run goes on
    entry = AuditEntry.objects.get(action="run.cancelled", object_id=str(cpu.pk))
    assert (entry.actor, entry.actor_label, entry.reason) == (alice.user, "alice", "uploaded the wrong file")
    assert entry.before["status"] == "queued"
    assert entry.after == {"status": "done", "verdict": "cancelled", "cancelled_by": "contestant"}
    page = answer.content.decode()
    assert f'id="cancel-own-run-{cpu.pk}"' not in page and f'id="cancel-own-run-{c500.pk}"' in page


def test_through_the_api_no_reason_is_needed_and_the_next_waiting_run_takes_the_freed_place(
        client, season, alice, settings, django_capture_on_commit_callbacks):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 1
    capture = django_capture_on_commit_callbacks
    issue = submitting.open_issue(season, alice, title="ReLU")
    first, second = (submit(capture, alice, issue, valid_files()) for _ in range(2))
    waiting = second.runs.get(gpu_type__slug="cpu")
    assert waiting.status == RunStatus.WAITING
    _, token = accounts.create_api_token(alice)

    with capture(execute=True):
        answer = cancel_by_api(client, first.runs.get(gpu_type__slug="cpu"), token)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["status"], body["verdict"], body["gpu_type"]) == ("done", "cancelled", "cpu")
    assert AuditEntry.objects.get(action="run.cancelled").reason == ""
    waiting.refresh_from_db()
    assert waiting.status == RunStatus.QUEUED and waiting.rq_job_id in queueing.waiting_job_ids(waiting.queue_name)

    # a run waiting for a place (not in Redis yet) is cancelled too
    still_waiting = second.runs.get(gpu_type__slug="c500")
    assert still_waiting.status == RunStatus.WAITING
    with capture(execute=True):
        assert cancel_by_api(client, still_waiting, token, {"reason": "not this one"}).json()["verdict"] == "cancelled"


@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded",
                                          "application/octet-stream"])
def test_through_the_api_a_post_with_no_body_at_all_cancels_but_a_body_of_null_is_refused(
        client, alice, alices, content_type, django_capture_on_commit_callbacks):
    """`curl -X POST`, `curl -d ''`, fetch or requests without data: no body, whatever the content type.
    JSON `null` is a body, and no object: refused as any other schema refuses it."""
    cpu = alices.runs.get(gpu_type__slug="cpu")
    _, token = accounts.create_api_token(alice)
    null = client.post(f"/api/v1/runs/{cpu.pk}/cancel", "null", content_type="application/json", headers=bearer(token))
    assert null.status_code == 422, null.content
    assert null.json()["detail"] == "invalid request: Input should be a JSON object, not null"
    assert Run.objects.get(pk=cpu.pk).status == RunStatus.QUEUED
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.generic("POST", f"/api/v1/runs/{cpu.pk}/cancel", b"", content_type=content_type,
                                headers=bearer(token))
    assert answer.status_code == 200, answer.content
    assert answer.json()["verdict"] == "cancelled" and Run.objects.get(pk=cpu.pk).verdict == Verdict.CANCELLED


def test_someone_elses_run_is_refused_and_stays_queued(client, bob, organizer, alices):
    cpu = alices.runs.get(gpu_type__slug="cpu")
    for person in (bob, organizer):  # an organizer cancels from the review page, with a reason
        client.force_login(person.user)
        page = client.get(f"/submissions/{alices.pk}/", headers=EN).content.decode()
        assert "cancel-own-run" not in page
        answer = client.post(f"/runs/{cpu.pk}/cancel/", {"reason": "mine now"}, headers=EN, follow=True)
        assert messages_of(answer) == [f"run #{cpu.pk} is not yours: only the contestant who submitted it can "
                                       "cancel it"]
        _, token = accounts.create_api_token(person)
        refused = cancel_by_api(client, cpu, token)
        assert refused.status_code == 403 and refused.json()["detail"].startswith(f"run #{cpu.pk} is not yours")
    cpu.refresh_from_db()
    assert cpu.status == RunStatus.QUEUED and cpu.rq_job_id in queueing.waiting_job_ids(cpu.queue_name)
    assert not AuditEntry.objects.filter(action="run.cancelled").exists()


def test_a_running_or_finished_run_is_refused(client, alice, alices, agent_and_token):
    agent, _ = agent_and_token
    cpu = alices.runs.get(gpu_type__slug="cpu")
    _, secret = judging.start_run(cpu.pk, agent, cpu.attempts)
    client.force_login(alice.user)
    page = client.get(f"/submissions/{alices.pk}/", headers=EN).content.decode()
    assert f'id="cancel-own-run-{cpu.pk}"' not in page  # being judged: no button
    answer = client.post(f"/runs/{cpu.pk}/cancel/", headers=EN, follow=True)
    assert messages_of(answer) == [f"run #{cpu.pk} is being judged by an agent; only a queued or waiting run can "
                                   "be cancelled"]
    _, token = accounts.create_api_token(alice)
    refused = cancel_by_api(client, cpu, token)
    assert refused.status_code == 409 and "is being judged by an agent" in refused.json()["detail"]
    assert Run.objects.get(pk=cpu.pk).status == RunStatus.RUNNING

    judging.record_result(cpu.pk, agent, secret, passed_result())
    finished = cancel_by_api(client, cpu, token)
    assert finished.status_code == 409 and finished.json()["detail"] == f"run #{cpu.pk} is already finished (Passed)"
    assert Run.objects.get(pk=cpu.pk).verdict == Verdict.PASSED
    assert not AuditEntry.objects.filter(action="run.cancelled").exists()
    assert cancel_by_api(client, Run(pk=cpu.pk + 1000), token).status_code == 404


def test_a_run_the_organizers_queued_is_theirs_to_cancel(client, alice, organizer, alices, agent_and_token,
                                                         django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    report_all(alices, agent, passed_result())
    with django_capture_on_commit_callbacks(execute=True):
        batch = rejudging.rejudge(RejudgeScope.SUBMISSION, alices, organizer.user, "new harness")
    rejudged = batch.runs.get(gpu_type__slug="cpu")
    client.force_login(alice.user)
    assert f'id="cancel-own-run-{rejudged.pk}"' not in client.get(f"/submissions/{alices.pk}/").content.decode()
    _, token = accounts.create_api_token(alice)
    refused = cancel_by_api(client, rejudged, token)
    assert refused.status_code == 409
    assert refused.json()["detail"] == (f"run #{rejudged.pk} was queued by the organizers (a rejudge or a second "
                                        "judging): only an organizer can cancel it")
    assert Run.objects.get(pk=rejudged.pk).status == RunStatus.QUEUED


def test_an_overlong_reason_is_refused(client, alice, alices):
    cpu = alices.runs.get(gpu_type__slug="cpu")
    client.force_login(alice.user)
    answer = client.post(f"/runs/{cpu.pk}/cancel/", {"reason": "x" * 2001}, headers=EN, follow=True)
    assert messages_of(answer) == ["a reason has at most 2000 characters; this one has 2001"]
    _, token = accounts.create_api_token(alice)
    assert cancel_by_api(client, cpu, token, {"reason": "x" * 2001}).status_code == 422
    assert Run.objects.get(pk=cpu.pk).status == RunStatus.QUEUED


def test_the_openapi_document_lists_the_cancel_and_its_refusals(client):
    operation = client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/runs/{run_id}/cancel"]["post"]
    assert {"200", "401", "403", "404", "409", "422"} <= set(operation["responses"])
    assert "no agent has started" in operation["description"]
