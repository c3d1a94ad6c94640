"""Scheduling under concurrency, on PostgreSQL's row locks: agents starting and reporting one contestant's
runs while an organizer cancels some, the contestant submits more and the sweeper runs, all at once.
No transaction may deadlock, and afterwards no run waits behind a free slot. On SQLite each write
transaction takes the database's write lock when it begins (IMMEDIATE): the same work, one writer at a
time, must end the same way."""
import threading

import pytest
from django.db import connections

from submissions.bundles import build_bundle
from submissions.models import GpuType, Run, RunStatus, Season
from submissions.services import accounts, cancelling, judging, recovery, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result

pytestmark = pytest.mark.django_db(transaction=True)
CAP = 3


def in_thread(work, errors):
    def target():
        try:
            work()
        except Exception as exc:  # collected: a deadlock shows up here as an OperationalError
            errors.append(exc)
        finally:
            connections.close_all()
    return threading.Thread(target=target)


def test_concurrent_starts_reports_cancels_and_submissions_neither_deadlock_nor_strand_a_run(settings):
    settings.MAX_QUEUED_RUNS_PER_CONTESTANT = CAP
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season = Season.objects.create(second_judging="off", code="S1", name="s", max_submissions_per_hour=100, max_submissions_per_day=100)
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    organizer = accounts.register_contestant("org", "pw-org-123", display_name="Org", is_staff=True)
    agents = [accounts.create_agent(f"agent-{i}", [cpu])[0] for i in range(3)]
    issue = submitting.open_issue(season, alice, title="burst")
    for _ in range(12):
        submitting.create_submission(alice, issue, build_bundle(valid_files()))

    def judge(agent):
        def work():
            for _ in range(2):
                run = Run.objects.filter(status=RunStatus.QUEUED).order_by("?").first()
                if run is None:
                    return
                try:
                    _, secret = judging.start_run(run.pk, agent, run.attempts)
                except (judging.RunConflict, judging.AgentRefused):
                    continue  # another agent or the organizer was first
                try:
                    judging.record_result(run.pk, agent, secret, passed_result())
                except judging.LateReport:
                    continue  # the organizer cancelled it while it was judged: a late report, kept as evidence
        return work

    def cancel():
        for run in Run.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.WAITING)).order_by("?")[:4]:
            try:
                cancelling.cancel_run(run.pk, organizer.user, "withdrawn")
            except cancelling.CancelRefused:
                pass  # an agent finished it first

    def submit():
        for _ in range(4):
            submitting.create_submission(alice, issue, build_bundle(valid_files()))

    errors = []
    threads = [in_thread(work, errors) for work in (*map(judge, agents), cancel, submit, recovery.sweep_runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    queued = Run.objects.filter(status=RunStatus.QUEUED).count()
    waiting = Run.objects.filter(status=RunStatus.WAITING).count()
    assert queued <= CAP and (waiting == 0 or queued == CAP), (queued, waiting)
    assert Run.objects.count() == 16 and not Run.objects.filter(status=RunStatus.RUNNING).exists()
    assert recovery.sweep_runs() == 0  # nothing was left for the sweeper to release
