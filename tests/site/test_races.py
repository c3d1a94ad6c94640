"""Two requests at once, or one request sent twice (a double click, a retry after a timeout): each change
is made once and every figure stays true. Each request runs in its own thread and database connection;
tests/site/races.py holds the first inside its transaction while the second runs."""
import pytest
from django.db.models.signals import pre_save

from submissions.bundles import build_bundle
from submissions.models import AuditEntry, Review, Standing
from submissions.services import accounts, reviewing, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all
from tests.site.races import interleave

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def judged(season, alice, agent_and_token):
    """Alice's submission, passed on every GPU type of the season."""
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    report_all(submission, agent_and_token[0], passed_result())
    return submission


@pytest.fixture
def second_organizer(db):
    return accounts.register_contestant("organizer2", "pw-org2-123", display_name="Org 2", is_staff=True)


def review_entries(submission):
    return list(AuditEntry.objects.filter(object_type="submission", object_id=str(submission.pk),
                                          action__startswith="review.").order_by("pk"))


def test_two_organizers_deciding_at_once_each_see_the_other_s_decision_in_the_trail(judged, organizer,
                                                                                    second_organizer):
    """The second decision is taken on the first, committed: its audit entry's `before` is the first's `after`."""
    first, second = interleave(
        lambda: reviewing.review_submission(judged, organizer.user, "accepted", reason="fine"),
        lambda: reviewing.review_submission(judged, second_organizer.user, "rejected", reason="a copy"),
        pre_save, Review)
    assert "error" not in first and "error" not in second
    entries = review_entries(judged)
    assert [e.action for e in entries] == ["review.accepted", "review.rejected"]
    assert entries[0].before is None and entries[1].before == entries[0].after
    assert Standing.objects.get(contestant=judged.contestant).accepted_count == 0  # the latest: rejected


def test_a_review_posted_twice_at_once_is_recorded_once(judged, organizer):
    decide = lambda: reviewing.review_submission(judged, organizer.user, "accepted", reason="fine")  # noqa: E731
    first, second = interleave(decide, decide, pre_save, Review)
    assert "error" not in first and "error" not in second
    assert first["value"].pk == second["value"].pk and Review.objects.count() == 1
    assert [e.action for e in review_entries(judged)] == ["review.accepted"]


def test_a_review_sent_again_after_a_timeout_is_recorded_once(judged, organizer):
    points = {"execution_time": 5}
    one = reviewing.review_submission(judged, organizer.user, "accepted", reason="fine", rubric=points,
                                      override_reason="hand-timed")
    trail = AuditEntry.objects.count()
    again = reviewing.review_submission(judged, organizer.user, "accepted", reason="fine", rubric=points,
                                        override_reason="hand-timed")
    assert again.pk == one.pk and Review.objects.count() == 1 and AuditEntry.objects.count() == trail
    # another decision, or the same one by someone else, is a new review
    reviewing.review_submission(judged, organizer.user, "rejected", reason="a copy after all")
    assert Review.objects.count() == 2
