"""Scheduling (docs/architecture.md, "Scheduling"): fresh runs before rejudges, a per-contestant cap on
queued runs so a burst cannot starve others, the sweeper releasing what waits, and cancelling.

Jobs are taken off the real Redis the way an agent's worker takes them: RQ's `Queue.dequeue_any` over
the agent's own queue list (profiler_agent.worker.queue_order.listen_order), then started and reported
through the site's services. tests/e2e/test_scheduling_end_to_end.py does the same with a real agent.
"""
import pytest
from rq import Queue

from profiler_agent.worker.queue_order import listen_order
from submissions import queueing
from submissions.bundles import build_bundle
from submissions.models import AuditEntry, GpuType, Rejudge, RejudgeScope, Run, RunStatus, Season, Standing, Verdict
from submissions.services import accounts, cancelling, judging, recovery, rejudging, scheduling, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result


@pytest.fixture
def cpu_season(db):
    """One GPU type, so one run per submission; no rate limit in the way of a burst."""
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season = Season.objects.create(second_judging="off", code="S1", name="Season one", max_submissions_per_hour=100,
                                   max_submissions_per_day=100)
    season.gpu_types.add(cpu)
    return season


@pytest.fixture
def agent(cpu_season):
    return accounts.create_agent("sched-agent", GpuType.objects.all())[0]


def submit(capture, contestant, issue, note=""):
    with capture(execute=True):
        return submitting.create_submission(contestant, issue, build_bundle(valid_files()), note=note)


def queued_and_waiting(capture, contestant, season, settings):
    """Under a cap of one queued run: the contestant's first run is queued, the second waits."""
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 1
    issue = submitting.open_issue(season, contestant, title="two")
    queued, waiting = (submit(capture, contestant, issue).runs.get() for _ in range(2))
    assert (queued.status, waiting.status) == (RunStatus.QUEUED, RunStatus.WAITING)
    return queued, waiting


def next_job(gpu_type):
    """The job an agent serving `gpu_type` would take next: RQ's dequeue over the agent's queue order."""
    connection = queueing.connection()
    queues = [Queue(name, connection=connection, serializer=queueing.SERIALIZER)
              for name in listen_order([gpu_type.queue_name])]
    found = Queue.dequeue_any(queues, None, connection=connection, serializer=queueing.SERIALIZER)
    return None if found is None else found[0]


def judge_next(capture, gpu_type, agent):
    """Take the next job and judge it as an agent would (start, then report); returns its run."""
    job = next_job(gpu_type)
    if job is None:
        return None
    with capture(execute=True):
        _, secret = judging.start_run(job.kwargs["run_id"], agent, job.kwargs["attempt"])
    with capture(execute=True):
        return judging.record_result(job.kwargs["run_id"], agent, secret, passed_result())


def test_the_agent_reads_the_queues_the_site_fills_fresh_before_rejudges():
    gpu_type = GpuType(slug="h100", name="H100")  # a final system test's queue first (tests/site/test_final_queue.py)
    assert listen_order([gpu_type.queue_name]) == [gpu_type.final_queue_name, gpu_type.queue_name,
                                                   gpu_type.rejudge_queue_name]


def test_fresh_submissions_are_judged_before_rejudges(cpu_season, alice, bob, organizer, agent,
                                                      django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    old = [submit(capture, alice, submitting.open_issue(cpu_season, alice, title=f"old {i}")) for i in range(2)]
    while judge_next(capture, cpu, agent):
        pass
    with capture(execute=True):
        batch = rejudging.rejudge(RejudgeScope.SEASON, cpu_season, organizer.user, "new harness")
    fresh = submit(capture, bob, submitting.open_issue(cpu_season, bob, title="fresh"))
    rejudge_runs = list(batch.runs.order_by("pk"))
    assert {r.queue_name for r in rejudge_runs} == {cpu.rejudge_queue_name}
    assert queueing.judging_queue(cpu.rejudge_queue_name).get_job_ids() == [r.rq_job_id for r in rejudge_runs]
    # a rejudge's place counts the fresh queue ahead of it
    fresh_run = fresh.runs.get()
    assert [scheduling.queue_position(r) for r in (fresh_run, *rejudge_runs)] == [1, 2, 3]

    order = []
    while (run := judge_next(capture, cpu, agent)) is not None:
        order.append(run.submission_id)
    assert order == [fresh.pk, old[0].pk, old[1].pk]
    assert not Run.objects.exclude(status=RunStatus.DONE).exists()


def test_a_burst_cannot_starve_another_contestant(cpu_season, alice, bob, agent, settings, client,
                                                  django_capture_on_commit_callbacks):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 3
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    issue = submitting.open_issue(cpu_season, alice, title="burst")
    burst = [submit(capture, alice, issue, note=str(i)) for i in range(10)]
    runs = [s.runs.get() for s in burst]
    assert [r.status for r in runs] == [RunStatus.QUEUED] * 3 + [RunStatus.WAITING] * 7
    assert queueing.judging_queue(cpu.queue_name).get_job_ids() == [r.rq_job_id for r in runs[:3]]
    assert all(r.attempts == 0 and r.rq_job_id == "" for r in runs[3:])  # nothing of theirs in Redis yet
    other = submit(capture, bob, submitting.open_issue(cpu_season, bob, title="single"))
    assert other.runs.get().status == RunStatus.QUEUED

    # The contestant sees why a run waits, and how many of their runs go first.
    client.force_login(alice.user)
    page = client.get(f"/submissions/{burst[5].pk}/runs/").content.decode()
    assert "Waiting" in page and "5 of your runs ahead" in page
    page = client.get(f"/submissions/{burst[5].pk}/runs/", headers={"Accept-Language": "zh-CN"}).content.decode()
    assert "等待中" in page and "前面还有您的 5 个运行" in page

    order = []
    while (run := judge_next(capture, cpu, agent)) is not None:
        order.append(run.submission_id)
    assert order.index(other.pk) < settings.MAX_QUEUED_RUNS_PER_CONTESTANT + 1
    assert sorted(order) == sorted([s.pk for s in burst] + [other.pk])  # nothing lost, nothing twice
    alice_order = [pk for pk in order if pk != other.pk]
    assert alice_order == [s.pk for s in burst]  # released oldest first


def test_the_cap_counts_per_gpu_type_and_spares_rejudges(cpu_season, alice, organizer, settings,
                                                         django_capture_on_commit_callbacks):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 1
    capture = django_capture_on_commit_callbacks
    cpu_season.gpu_types.add(GpuType.objects.create(slug="c500", name="MetaX C500"))
    first = submit(capture, alice, submitting.open_issue(cpu_season, alice, title="a"))
    second = submit(capture, alice, submitting.open_issue(cpu_season, alice, title="b"))
    assert {r.status for r in first.runs.all()} == {RunStatus.QUEUED}  # one queued run on each type
    assert {r.status for r in second.runs.all()} == {RunStatus.WAITING}
    with capture(execute=True):
        batch = rejudging.rejudge(RejudgeScope.SUBMISSION, first, organizer.user, "again")
    assert {r.status for r in batch.runs.all()} == {RunStatus.QUEUED}


def test_no_cap_when_the_setting_is_zero(cpu_season, alice, settings, django_capture_on_commit_callbacks):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = 0
    issue = submitting.open_issue(cpu_season, alice, title="burst")
    runs = [submit(django_capture_on_commit_callbacks, alice, issue).runs.get() for _ in range(5)]
    assert {r.status for r in runs} == {RunStatus.QUEUED}


def test_the_sweeper_releases_a_run_left_waiting(cpu_season, alice, agent, settings,
                                                 django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    queued, waiting = queued_and_waiting(capture, alice, cpu_season, settings)
    with capture(execute=True):
        assert recovery.sweep_runs() == 0  # no free slot: it keeps waiting, and is not taken for lost
    # The queued run ends without its release step (as if that step had failed).
    Run.objects.filter(pk=queued.pk).update(status=RunStatus.DONE, verdict=Verdict.INTERNAL_ERROR)
    queueing.judging_queue(cpu.queue_name).empty()
    with capture(execute=True):
        assert recovery.sweep_runs() == 1
    waiting.refresh_from_db()
    assert (waiting.status, waiting.attempts) == (RunStatus.QUEUED, 1)
    assert queueing.judging_queue(cpu.queue_name).get_job_ids() == [waiting.rq_job_id]
    assert judge_next(capture, cpu, agent).pk == waiting.pk


def test_a_waiting_run_cannot_be_started(cpu_season, alice, agent, settings, django_capture_on_commit_callbacks):
    _, waiting = queued_and_waiting(django_capture_on_commit_callbacks, alice, cpu_season, settings)
    with pytest.raises(judging.RunConflict):
        judging.start_run(waiting.pk, agent, 0)


def test_an_organizer_cancels_a_queued_run_from_the_console(cpu_season, alice, organizer, agent, settings, client,
                                                            django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    judged = submit(capture, alice, submitting.open_issue(cpu_season, alice, title="judged"))
    judge_next(capture, cpu, agent)
    queued, waiting = queued_and_waiting(capture, alice, cpu_season, settings)
    standing = Standing.objects.get(contestant=alice)
    standing_before = {f: getattr(standing, f) for f in ("best_speedup", "submission_count", "accepted_count", "rank")}
    audits_before = AuditEntry.objects.filter(action="standing.changed").count()

    client.force_login(organizer.user)
    page = client.get(f"/organizer/submissions/{queued.submission_id}/").content.decode()
    assert f'id="cancel-run-{queued.pk}"' in page and "Cancel this run" in page
    with capture(execute=True):
        response = client.post(f"/organizer/runs/{queued.pk}/cancel/", {"reason": "duplicate upload"}, follow=True)
    assert f"Run #{queued.pk} is cancelled." in response.content.decode()

    queued.refresh_from_db()
    assert (queued.status, queued.verdict) == (RunStatus.DONE, Verdict.CANCELLED)
    assert queued.rq_job_id not in queueing.judging_queue(cpu.queue_name).get_job_ids()
    assert not queueing.connection().exists(f"rq:job:{queued.rq_job_id}")
    entry = AuditEntry.objects.get(action="run.cancelled", object_id=str(queued.pk))
    assert (entry.actor, entry.reason, entry.before["status"]) == (organizer.user, "duplicate upload", "queued")
    standing.refresh_from_db()
    assert {f: getattr(standing, f) for f in standing_before} == standing_before
    assert AuditEntry.objects.filter(action="standing.changed").count() == audits_before
    # Its slot went to the contestant's waiting run, which an agent now takes.
    waiting.refresh_from_db()
    assert waiting.status == RunStatus.QUEUED
    assert judge_next(capture, cpu, agent).pk == waiting.pk
    public = client.get(f"/submissions/{queued.submission_id}/runs/").content.decode()
    assert "Cancelled" in public and judged.runs.get().verdict == Verdict.PASSED


def test_a_cancelled_job_that_an_agent_had_already_taken_is_refused_at_start(
        cpu_season, alice, organizer, agent, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    run = submit(capture, alice, submitting.open_issue(cpu_season, alice, title="raced")).runs.get()
    job = next_job(cpu)  # the agent popped it a moment before the organizer cancelled
    with capture(execute=True):
        cancelling.cancel_run(run.pk, organizer.user, "raced")
    with pytest.raises(judging.RunConflict):
        judging.start_run(job.kwargs["run_id"], agent, job.kwargs["attempt"])


def test_a_cancelled_rejudge_leaves_the_earlier_verdict_in_place(cpu_season, alice, organizer, agent, client,
                                                                 django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    submission = submit(capture, alice, submitting.open_issue(cpu_season, alice, title="x"))
    judge_next(capture, cpu, agent)
    with capture(execute=True):
        batch = rejudging.rejudge(RejudgeScope.SUBMISSION, submission, organizer.user, "check")
    (run,) = batch.runs.all()
    client.force_login(organizer.user)
    assert f'id="cancel-run-{run.pk}"' in client.get(f"/organizer/rejudges/{batch.pk}/").content.decode()
    with capture(execute=True):
        response = client.post(f"/organizer/runs/{run.pk}/cancel/", {"reason": "not needed", "back": "rejudge"})
    assert response["Location"] == f"/organizer/rejudges/{batch.pk}/"
    assert queueing.judging_queue(cpu.rejudge_queue_name).get_job_ids() == []
    page = client.get(f"/submissions/{submission.pk}/runs/").content.decode()
    assert "Passed" in page and "Cancelled" not in page
    assert Rejudge.objects.get(pk=batch.pk) and rejudging.progress(batch) == (1, 1)


def test_cancelling_needs_a_reason_an_organizer_and_a_post(cpu_season, alice, organizer, client,
                                                           django_capture_on_commit_callbacks):
    run = submit(django_capture_on_commit_callbacks, alice,
                 submitting.open_issue(cpu_season, alice, title="x")).runs.get()
    url = f"/organizer/runs/{run.pk}/cancel/"
    client.force_login(alice.user)
    assert client.post(url, {"reason": "mine"}).status_code == 403
    client.force_login(organizer.user)
    assert client.get(url).status_code == 405
    response = client.post(url, {"reason": "  "}, follow=True)
    assert "needs a reason" in response.content.decode()
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    cancelling.cancel_run(run.pk, organizer.user, "once")
    with pytest.raises(cancelling.CancelRefused, match="already finished"):
        cancelling.cancel_run(run.pk, organizer.user, "twice")


def test_a_waiting_run_can_be_cancelled_and_the_queue_is_untouched(cpu_season, alice, organizer, settings,
                                                                   django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    cpu = GpuType.objects.get(slug="cpu")
    queued, waiting = queued_and_waiting(capture, alice, cpu_season, settings)
    assert scheduling.runs_ahead(waiting) == 1 and scheduling.queue_position(queued) == 1
    with capture(execute=True):
        cancelling.cancel_run(waiting.pk, organizer.user, "withdrawn")
    waiting.refresh_from_db()
    assert (waiting.status, waiting.verdict) == (RunStatus.DONE, Verdict.CANCELLED)
    assert queueing.judging_queue(cpu.queue_name).get_job_ids() == [queued.rq_job_id]
