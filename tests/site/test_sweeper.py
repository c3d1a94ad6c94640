"""Runs never stay lost: a vanished job or a silent agent sends the run back to the queue."""
from datetime import timedelta

from django.utils import timezone

from submissions import queueing
from submissions.bundles import build_bundle
from submissions.models import Run, RunStatus, Verdict
from submissions.services import judging, recovery, submitting
from tests.site.bundle_files import valid_files


def make_run(season, alice, capture):
    issue = submitting.open_issue(season, alice, title="ReLU")
    with capture(execute=True):
        submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    return submission.runs.get(gpu_type__slug="cpu")


def age(run, seconds, field="enqueued_at"):
    Run.objects.filter(pk=run.pk).update(**{field: timezone.now() - timedelta(seconds=seconds)})


def test_a_queued_run_whose_job_vanished_is_enqueued_again(season, alice, settings, django_capture_on_commit_callbacks):
    run = make_run(season, alice, django_capture_on_commit_callbacks)
    queue = queueing.judging_queue(run.gpu_type.queue_name)
    assert queue.get_job_ids() == [run.rq_job_id]
    age(run, 10)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 0  # still waiting in Redis, and young: untouched
    queue.empty()  # Redis lost the job
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 0  # within the grace period
    age(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert run.attempts == 2 and run.status == RunStatus.QUEUED
    assert queue.get_job_ids() == [run.rq_job_id] and run.rq_job_id.endswith("-2")


def test_a_silent_agent_past_the_deadline_loses_the_run_and_attempts_are_bounded(
        season, alice, settings, django_capture_on_commit_callbacks):
    settings.RUN_MAX_ATTEMPTS = 2
    run = make_run(season, alice, django_capture_on_commit_callbacks)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=timezone.now())
    age(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 0  # running, started just now: neither silent nor past the deadline
    age(run, settings.RUN_DEADLINE_SECONDS + 5, field="started_at")
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert (run.status, run.attempts) == (RunStatus.QUEUED, 2)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=timezone.now() - timedelta(days=1))
    age(run, settings.RUN_DEADLINE_SECONDS + 5)
    assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert (run.status, run.verdict) == (RunStatus.DONE, Verdict.INTERNAL_ERROR)


def test_the_limits_come_from_start_not_the_job_and_the_deadline_outlasts_the_job(
        season, alice, settings, django_capture_on_commit_callbacks):
    run = make_run(season, alice, django_capture_on_commit_callbacks)
    job = queueing.judging_queue(run.gpu_type.queue_name).fetch_job(run.rq_job_id)
    assert job.kwargs == {"run_id": run.pk, "attempt": 1}  # a forged job could not loosen the limits
    assert judging.judging_options() == {"run_timeout_s": settings.JUDGE_TIMEOUT_SECONDS,
                                         "compile_timeout_s": settings.JUDGE_COMPILE_TIMEOUT_SECONDS}
    # candidate, LLM variant and self-test may each use both limits; RQ must not kill a job that keeps them
    assert job.timeout >= 3 * (settings.JUDGE_TIMEOUT_SECONDS + settings.JUDGE_COMPILE_TIMEOUT_SECONDS)
    # the sweeper must not hand a run to another agent while its first job may still be legitimately running
    assert settings.RUN_DEADLINE_SECONDS > job.timeout


def test_a_malformed_job_hash_written_by_an_agent_host_does_not_stop_the_sweeper(
        season, alice, settings, django_capture_on_commit_callbacks):
    run = make_run(season, alice, django_capture_on_commit_callbacks)
    connection = queueing.connection()
    connection.hset(f"rq:job:{run.rq_job_id}", mapping={"data": b"\x80not json", "created_at": "garbage",
                                                        "status": "nonsense"})
    queueing.judging_queue(run.gpu_type.queue_name).empty()
    age(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert run.attempts == 2 and queueing.is_waiting(run.gpu_type.queue_name, run.rq_job_id)
    connection.delete(f"rq:job:{queueing.job_id(run.pk, 1, run.gpu_type.slug)}")


def test_a_job_taken_off_its_queue_with_its_hash_left_queued_is_lost(
        season, alice, settings, django_capture_on_commit_callbacks):
    """An agent host can remove a job id from the queue list and leave the hash saying "queued":
    the sweeper must not believe the hash."""
    run = make_run(season, alice, django_capture_on_commit_callbacks)
    connection = queueing.connection()
    queue = queueing.judging_queue(run.gpu_type.queue_name)
    connection.lrem(queue.key, 0, run.rq_job_id)
    assert connection.hget(f"rq:job:{run.rq_job_id}", "status") == b"queued"
    assert not queueing.is_waiting(run.gpu_type.queue_name, run.rq_job_id)
    age(run, settings.RUN_REQUEUE_AFTER_SECONDS + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert run.attempts == 2 and queueing.is_waiting(run.gpu_type.queue_name, run.rq_job_id)
    connection.delete(f"rq:job:{queueing.job_id(run.pk, 1, run.gpu_type.slug)}")
