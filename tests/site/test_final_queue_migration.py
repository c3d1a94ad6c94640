"""Migration 0027 on a database with a final system test under way: its runs and their second judgings
become the final queue's, but a run queued now, whose job waits on the rejudge queue, stays there
until it leaves it (the sweep looks for its job on its run's queue)."""
import datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from submissions.models import GpuType, Run, RunStatus, Season
from submissions.services import accounts, final_system_tests, judging, reviewing, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, submit

BEFORE = [("submissions", "0026_final_system_test")]
AFTER = [("submissions", "0027_final_queue")]


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


@pytest.fixture(autouse=True)
def whole_schema_after():
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_a_final_tests_runs_made_before_the_final_queue_become_its_but_a_queued_one(
        queue_prefix, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"), GpuType.objects.create(slug="c500", name="C500"))
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    organizer = accounts.register_contestant("org", "pw-org-123", display_name="Org", is_staff=True)
    agent, _ = accounts.create_agent("migration-agent", GpuType.objects.all())
    submission = submit(capture, alice, submitting.open_issue(season, alice, title="ReLU"), valid_files())
    for run in submission.runs.all():
        _, secret = judging.start_run(run.pk, agent, run.attempts)
        judging.record_result(run.pk, agent, secret, passed_result())
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data", acceptance_override="test data")
    Season.objects.filter(pk=season.pk).update(ends_at=timezone.now() - datetime.timedelta(minutes=1))
    season.refresh_from_db()
    with capture(execute=True):
        test = final_system_tests.start(season, "final system test", actor=organizer.user)
    judged, queued = test.rejudge.runs.order_by("pk")
    _, secret = judging.start_run(judged.pk, agent, judged.attempts)
    judging.record_result(judged.pk, agent, secret, passed_result())
    confirming = Run.objects.create(submission=submission, gpu_type=judged.gpu_type, job_secret_hash="",
                                    confirms=judged, status=RunStatus.WAITING)
    fresh = list(submission.runs.filter(rejudge__isnull=True, confirms__isnull=True))

    migrate(BEFORE)
    migrate(AFTER)
    flags = dict(Run.objects.values_list("pk", "final_test"))
    assert flags[judged.pk] and flags[confirming.pk]
    assert not flags[queued.pk]  # its job is on the rejudge queue
    assert not any(flags[run.pk] for run in fresh)
