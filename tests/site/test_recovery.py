"""Lost runs come back fast and once: heartbeats that name the judged run, sweeps that re-check under
the row lock (also two at once, on real row locks), and a heartbeat whose cost does not grow with
the backlog."""
import threading
from datetime import timedelta

import pytest
from django.db import connection as db_connection
from django.utils import timezone

from submissions import queueing
from submissions.models import AuditEntry, Run, RunStatus
from submissions.services import accounts, agent_redis, recovery
from tests.site.judging_helpers import hand_out
from tests.site.test_agent_api import agent_headers, queued_run, started  # noqa: F401 (fixture)


def heartbeat(client, token, judging):
    payload = {"name": "w0", "queues": [], "inventory": {}, "versions": {}}
    if judging is not None:
        payload["judging"] = judging
    response = client.post("/api/v1/agent/heartbeat", payload, content_type="application/json",
                           headers=agent_headers(token))
    assert response.status_code == 200, response.content


def backdate(run, seconds, *fields):
    Run.objects.filter(pk=run.pk).update(**{f: timezone.now() - timedelta(seconds=seconds) for f in fields})


def test_a_running_run_named_in_heartbeats_stays_and_one_no_longer_named_is_judged_again(
        client, queued_run, agent_and_token, settings, django_capture_on_commit_callbacks):
    run, _ = queued_run
    agent, token = agent_and_token
    started(client, run, token)
    backdate(run, settings.RUN_SILENT_AFTER_SECONDS + 5, "started_at")
    heartbeat(client, token, [{"run_id": run.pk, "attempt": run.attempts}])
    run.refresh_from_db()
    assert run.alive_at is not None
    assert recovery.sweep_runs() == 0  # started long ago, but its agent named it just now
    # another run of the same agent, a stale attempt and another agent's naming vouch for nothing
    other, other_token = accounts.create_agent("other", [run.gpu_type])
    backdate(run, settings.RUN_SILENT_AFTER_SECONDS + 5, "alive_at")
    heartbeat(client, token, [{"run_id": run.pk, "attempt": run.attempts - 1}, {"run_id": run.pk + 999, "attempt": 1}])
    heartbeat(client, other_token, [{"run_id": run.pk, "attempt": run.attempts}])
    heartbeat(client, token, [])  # the worker came back after a crash: it judges nothing
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 1
    attempt = run.attempts
    run.refresh_from_db()
    assert (run.status, run.attempts, run.agent, run.alive_at) == (RunStatus.QUEUED, attempt + 1, None, None)
    assert run.rq_job_id in job_ids(run)  # (the first job is still listed: no worker took it in this test)
    entry = AuditEntry.objects.get(action="run.requeued", object_id=str(run.pk))
    assert "did not name it" in entry.reason and entry.before == {"attempt": attempt, "status": "running"}


def job_ids(run):
    return queueing.judging_queue(run.gpu_type.queue_name).get_job_ids()


def test_an_agent_too_old_to_name_runs_vouches_for_all_it_started(client, queued_run, agent_and_token, settings):
    run, _ = queued_run
    _, token = agent_and_token
    started(client, run, token)
    backdate(run, settings.RUN_SILENT_AFTER_SECONDS + 5, "started_at")
    heartbeat(client, token, None)
    assert recovery.sweep_runs() == 0
    backdate(run, settings.RUN_SILENT_AFTER_SECONDS + 5, "alive_at")  # then it fell silent
    assert recovery.sweep_runs() == 1


def test_two_sweeps_that_saw_the_same_lost_run_requeue_it_once(queued_run, settings,
                                                               django_capture_on_commit_callbacks):
    """The race the issue measured: the second sweep's decision is taken again under the row lock."""
    run, _ = queued_run
    queueing.judging_queue(run.gpu_type.queue_name).empty()  # Redis lost the job
    backdate(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5, "enqueued_at")
    now = timezone.now()
    seen_by_first, seen_by_second = list(recovery._lost_queued(now, {})), list(recovery._lost_queued(now, {}))
    assert [lost.pk for lost in seen_by_first] == [lost.pk for lost in seen_by_second] == [run.pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery._requeue(seen_by_first[0], now)
    assert not recovery._requeue(seen_by_second[0], now)  # the attempt moved on: nothing to do
    run.refresh_from_db()
    assert run.attempts == 2 and job_ids(run) == [run.rq_job_id]
    assert AuditEntry.objects.filter(action="run.requeued", object_id=str(run.pk)).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_sweeps_requeue_each_lost_run_once(season, alice, settings):
    """Several lost runs, four sweeps started together in threads (own database connections): each
    run is requeued exactly once. On PostgreSQL the row locks are real; on SQLite each write
    transaction takes the database's write lock when it begins (IMMEDIATE), so the sweeps queue up
    and every re-check sees the others' requeues."""
    from submissions.bundles import build_bundle
    from submissions.services import submitting
    from tests.site.bundle_files import valid_files

    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 0  # every run in Redis: none held back by the scheduling cap
    issue = submitting.open_issue(season, alice, title="ReLU")
    runs = [run for _ in range(4) for run in submitting.create_submission(alice, issue, build_bundle(valid_files())).runs.all()]
    for run in runs:
        queueing.judging_queue(run.gpu_type.queue_name).empty()
        backdate(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5, "enqueued_at")
    barrier, counts, errors = threading.Barrier(4), [], []

    def sweep():
        try:
            barrier.wait()
            counts.append(recovery.sweep_runs())
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            db_connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(counts) == len(runs)
    assert {run.attempts for run in Run.objects.filter(pk__in=[r.pk for r in runs])} == {2}
    assert AuditEntry.objects.filter(action="run.requeued").count() == len(runs)


def test_a_job_waiting_or_taken_by_a_host_is_alive_and_one_only_in_a_registry_is_not(queued_run, agent_and_token,
                                                                                     settings):
    """Only the site pushes to queues and a host may only move ids into its own claim list: those two are
    where a queued run's job lives. The started registry is every host's to write, so it proves nothing."""
    run, _ = queued_run
    agent, _ = agent_and_token
    queue = queueing.judging_queue(run.gpu_type.queue_name)
    redis = queueing.connection()
    now = timezone.now() + timedelta(seconds=settings.RUN_REQUEUE_AFTER_SECONDS + 1)

    def lost():
        claimed, _ = recovery._sweep_claims(now)
        return [item.pk for item in recovery._lost_queued(now, claimed)]

    assert lost() == []
    hand_out(run, agent)  # what the host's worker does first: the id moves into its claim list
    assert lost() == []
    redis.lrem(agent_redis.claim_list(agent.name), 0, run.rq_job_id)
    redis.zadd(f"rq:wip:{queue.name}", {f"{run.rq_job_id}:exec1": now.timestamp() + 30})  # written by any host
    assert lost() == [run.pk]


def test_a_heartbeat_sweeps_at_most_once_per_interval_site_wide(client, queued_run, agent_and_token, settings,
                                                                 django_capture_on_commit_callbacks):
    run, _ = queued_run
    _, token = agent_and_token
    settings.SWEEP_INTERVAL_SECONDS = 60
    queueing.site_connection().delete(recovery.sweep_key())
    queueing.judging_queue(run.gpu_type.queue_name).empty()
    backdate(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5, "enqueued_at")
    queueing.site_connection().set(recovery.sweep_key(), "someone swept", ex=60)
    heartbeat(client, token, [])
    run.refresh_from_db()
    assert run.attempts == 1  # a sweep ran less than an interval ago: this heartbeat did not sweep
    queueing.site_connection().delete(recovery.sweep_key())
    with django_capture_on_commit_callbacks(execute=True):
        heartbeat(client, token, [])
    run.refresh_from_db()
    assert run.attempts == 2
    assert queueing.site_connection().ttl(recovery.sweep_key()) > 0
    queueing.site_connection().delete(recovery.sweep_key())


def test_a_restarted_worker_hands_back_its_predecessors_run_at_once_and_only_its_own(
        client, queued_run, agent_and_token, settings, django_capture_on_commit_callbacks):
    run, _ = queued_run
    agent, token = agent_and_token
    started(client, run, token)
    other, other_token = accounts.create_agent("other", [run.gpu_type])
    payload = {"judging": [], "abandoned": [{"run_id": run.pk, "attempt": run.attempts}]}
    for token_used in (other_token, token):  # another agent cannot give this run up; its own can
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post("/api/v1/agent/heartbeat", payload, content_type="application/json",
                                   headers=agent_headers(token_used))
        assert response.status_code == 200
        run.refresh_from_db()
        if token_used == other_token:
            assert (run.status, run.attempts) == (RunStatus.RUNNING, 1)
    assert (run.status, run.attempts) == (RunStatus.QUEUED, 2)
    assert job_ids(run)[0] == run.rq_job_id  # at the front: the restarted worker takes it first
    entry = AuditEntry.objects.get(action="run.requeued", object_id=str(run.pk))
    assert entry.actor_label == f"agent:{agent.name}" and "abandoned" in entry.reason


def test_a_run_queued_under_an_id_that_names_no_gpu_type_goes_out_again_under_a_new_one(
        queued_run, settings, django_capture_on_commit_callbacks):
    """A site upgraded with runs in its queues: their jobs' ids (`gpu-run-7-1`) name no GPU type, so no
    host's Redis user may read them. The sweep queues each again under a new id, spending no attempt."""
    run, _ = queued_run
    redis, queue_key = queueing.connection(), f"rq:queue:{run.queue_name}"
    old_id = f"{queueing.job_id_prefix('')[:-1]}run-{run.pk}-1"
    redis.lrem(queue_key, 0, run.rq_job_id)
    redis.rpush(queue_key, old_id)
    Run.objects.filter(pk=run.pk).update(rq_job_id=old_id)
    backdate(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5, "enqueued_at")
    with django_capture_on_commit_callbacks(execute=True):
        recovery.sweep_runs()
    run.refresh_from_db()
    assert run.rq_job_id == queueing.job_id(run.pk, 2, run.gpu_type.slug) and run.spent_attempts == 1
    assert redis.lrange(queue_key, 0, -1) == [run.rq_job_id.encode()]
    assert AuditEntry.objects.filter(action="run.requeued", object_id=str(run.pk), reason__contains="older site").exists()
