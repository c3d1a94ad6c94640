"""Two requests at once, or one request sent twice (a double click, a retry after a timeout): each change
is made once and every figure stays true. Each request runs in its own thread and database connection;
tests/site/races.py holds the first inside its transaction while the second runs."""
import html
from datetime import timedelta

import pytest
from django.db.models.signals import pre_save
from django.utils import timezone

from leaderboard import services as leaderboard_services
from submissions.bundles import build_bundle
from submissions.models import AuditEntry, Issue, Rejudge, RejudgeScope, Review, Run, Standing
from submissions.rules import ranked_runs
from submissions.services import accounts, judging, recovery, rejudging, reviewing, seasons, submitting
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


def test_a_review_sent_again_after_a_timeout_is_recorded_once(judged, organizer, second_organizer):
    points = {"execution_time": 5}
    one = reviewing.review_submission(judged, organizer.user, "accepted", reason="fine", rubric=points,
                                      override_reason="hand-timed")
    trail = AuditEntry.objects.count()
    again = reviewing.review_submission(judged, organizer.user, "accepted", reason="fine", rubric=points,
                                        override_reason="hand-timed")
    assert again.pk == one.pk and Review.objects.count() == 1 and AuditEntry.objects.count() == trail
    # the same decision by someone else, or another one, is a new review
    reviewing.review_submission(judged, second_organizer.user, "accepted", reason="fine", rubric=points,
                                override_reason="hand-timed")
    reviewing.review_submission(judged, organizer.user, "rejected", reason="a copy after all")
    assert Review.objects.count() == 3


def test_a_rejudge_requested_twice_at_once_judges_once(judged, organizer, second_organizer):
    """Two clicks (or two organizers) at once: one run more per GPU type, not two (a second sample of the
    same judgement would move the submission's ranked median)."""
    first, second = interleave(
        lambda: rejudging.rejudge(RejudgeScope.SUBMISSION, judged, organizer.user, "new harness"),
        lambda: rejudging.rejudge(RejudgeScope.ISSUE, judged.issue, second_organizer.user, "new harness"),
        pre_save, Run)
    assert "error" not in first and "error" not in second
    assert first["value"].pk == second["value"].pk and Rejudge.objects.count() == 1
    assert judged.runs.filter(rejudge__isnull=False).count() == judged.issue.season.gpu_types.count()
    assert AuditEntry.objects.filter(action="submission.rejudged").count() == 1


def test_a_rejudge_sent_again_before_its_runs_start_adds_none_after_they_start_it_does(judged, organizer,
                                                                                      agent_and_token):
    batch = rejudging.rejudge(RejudgeScope.SUBMISSION, judged, organizer.user, "new harness")
    assert rejudging.rejudge(RejudgeScope.SUBMISSION, judged, organizer.user, "new harness").pk == batch.pk
    assert Run.objects.filter(rejudge__isnull=False).count() == 2
    started = batch.runs.order_by("pk").first()
    judging.start_run(started.pk, agent_and_token[0], started.attempts)
    again = rejudging.rejudge(RejudgeScope.SUBMISSION, judged, organizer.user, "one more sample")
    assert again.pk != batch.pk and list(again.runs.values_list("gpu_type_id", flat=True)) == [started.gpu_type_id]


def test_a_standing_refreshed_while_the_ranking_rule_changes_is_ranked_by_the_new_rule(
        season, alice, bob, organizer, agent_and_token):
    """The agent's report (or a submission) read the season before an organizer changed its rule and
    committed: its re-rank, after the change, must use the new rule, not the one it read."""
    agent = agent_and_token[0]
    carol = accounts.register_contestant("carol", "pw-carol-123", display_name="Carol")
    for contestant, count in ((alice, 1), (bob, 2), (carol, 1)):
        issue = submitting.open_issue(season, contestant, title="ReLU")
        for _ in range(count):
            submission = submitting.create_submission(contestant, issue, build_bundle(valid_files()))
            report_all(submission, agent, passed_result())
        reviewing.review_submission(submission, organizer.user, "accepted", reason="fine", acceptance_override="a test")
    carol_issue = submitting.open_issue(season, carol, title="GELU")
    carol_issue = Issue.objects.select_related("season").get(pk=carol_issue.pk)  # her request's view of the season
    ranks = lambda: {s.contestant.user.username: s.rank  # noqa: E731
                     for s in Standing.objects.filter(season=season).select_related("contestant__user")}
    assert ranks() == {"alice": 1, "bob": 1, "carol": 1}  # accepted_count: one each, same points

    first, second = interleave(
        lambda: seasons.change_ranking(season, "cumulative_score", actor=organizer.user, reason="seed 000's rule"),
        lambda: submitting.create_submission(carol, carol_issue, build_bundle(valid_files())),
        pre_save, AuditEntry, when=lambda entry: entry.action == "season.ranking_changed")
    assert "error" not in first and "error" not in second
    # cumulative_score: equal scores, more submissions first (carol's second came in the race), then earlier
    assert ranks() == {"bob": 1, "carol": 2, "alice": 3}


def test_a_review_and_a_report_that_flags_the_reviewed_submission_do_not_deadlock(judged, alice, organizer,
                                                                                agent_and_token):
    """The review holds its submission, then takes the season's lock; the report of a later submission
    holds the season's lock, then inserts a flag naming the reviewed one (no_improvement): neither waits."""
    agent = agent_and_token[0]
    reviewing.review_submission(judged, organizer.user, "accepted", reason="fine")
    later = submitting.create_submission(alice, judged.issue, build_bundle(valid_files()))
    *first_runs, last = later.runs.order_by("pk")
    for run in first_runs:
        _, secret = judging.start_run(run.pk, agent, run.attempts)
        judging.record_result(run.pk, agent, secret, passed_result())
    _, secret = judging.start_run(last.pk, agent, last.attempts)
    first, second = interleave(
        lambda: reviewing.review_submission(judged, organizer.user, "accepted", reason="fine, looked again"),
        lambda: judging.record_result(last.pk, agent, secret, passed_result()),
        pre_save, Review)
    assert "error" not in first and "error" not in second, (first, second)
    assert later.abuse_flags.filter(kind="no_improvement", other_submission=judged).exists()


@pytest.mark.parametrize("thaw", [False, True])
def test_a_freeze_or_thaw_sent_twice_at_once_is_done_and_audited_once(season, organizer, thaw):
    """The second finds the first done (a ValueError that says so), not a duplicate key nor a second entry."""
    if thaw:
        leaderboard_services.freeze_scoreboard(season, organizer.user, reason="contest ends")
        action, done = leaderboard_services.unfreeze_scoreboard, "scoreboard.unfrozen"
    else:
        action, done = leaderboard_services.freeze_scoreboard, "scoreboard.frozen"
    twice = lambda: action(season, organizer.user, reason="double click")  # noqa: E731
    first, second = interleave(twice, twice, pre_save, AuditEntry, when=lambda entry: entry.action == done)
    assert "error" not in first and isinstance(second.get("error"), ValueError), (first, second)
    assert AuditEntry.objects.filter(action=done).count() == 1


def test_a_report_that_arrives_after_the_sweeper_gave_its_run_up_is_the_verdict(season, alice, agent_and_token,
                                                                                 settings):
    """The agent judged on while its heartbeats went missing; the sweeper, attempts spent, closed the run
    as the platform's failure. The report of that very attempt then comes: it is kept, not refused."""
    settings.RUN_MAX_ATTEMPTS = 1
    agent = agent_and_token[0]
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    run = submission.runs.get(gpu_type__slug="cpu")
    _, secret = judging.start_run(run.pk, agent, run.attempts)
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(seconds=settings.RUN_DEADLINE_SECONDS + 5))
    assert recovery.sweep_runs() == 1
    run.refresh_from_db()
    assert (run.status, run.verdict) == ("done", "internal_error")

    judging.record_result(run.pk, agent, secret, passed_result(3.0))
    run.refresh_from_db()
    assert (run.status, run.verdict, run.speedup) == ("done", "passed", 3.0)
    assert ranked_runs.figure(Run.objects.filter(pk=run.pk)).speedup == 3.0
    verdicts = AuditEntry.objects.filter(action="run.verdict", object_id=str(run.pk)).order_by("pk")
    assert [(e.actor_label, (e.before or {}).get("verdict"), e.after["verdict"]) for e in verdicts] == [
        ("sweeper", None, "internal_error"), ("agent:test-agent", "internal_error", "passed")]
    with pytest.raises(judging.RunConflict):  # and once judged, a repeat changes nothing
        judging.record_result(run.pk, agent, secret, passed_result(9.0))
    with pytest.raises(judging.AgentRefused):  # nor can another secret
        judging.record_result(run.pk, agent, "guess", passed_result(9.0))


def test_the_rejudge_button_clicked_twice_leads_to_the_first_rejudge(client, judged, organizer):
    client.force_login(organizer.user)
    url = f"/organizer/submissions/{judged.pk}/rejudge/"
    first = client.post(url, {"reason": "new harness"})
    again = client.post(url, {"reason": "new harness"}, follow=True, headers={"Accept-Language": "en"})
    batch = Rejudge.objects.get()
    assert first.url == again.redirect_chain[0][0] == f"/organizer/rejudges/{batch.pk}/"
    assert (f"Nothing new was queued: the runs of rejudge #{batch.pk} (Submission {judged.pk}) have not started yet."
            in html.unescape(again.content.decode()))


def test_a_late_report_is_refused_when_the_bundle_was_submitted_again_meanwhile(season, alice, agent_and_token,
                                                                                 settings):
    """Given up, the submission did not count as judged, so its contestant sent the same bundle again; the
    late report then comes. Keeping both would rank the luckier of two samples of one code."""
    settings.RUN_MAX_ATTEMPTS = 1
    agent = agent_and_token[0]
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = valid_files()
    submission = submitting.create_submission(alice, issue, build_bundle(files))
    runs = list(submission.runs.order_by("pk"))
    secrets = [judging.start_run(run.pk, agent, run.attempts)[1] for run in runs]
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(
        started_at=timezone.now() - timedelta(seconds=settings.RUN_DEADLINE_SECONDS + 5))
    assert recovery.sweep_runs() == len(runs)
    again = submitting.create_submission(alice, issue, build_bundle(files))
    with pytest.raises(judging.RunConflict, match=f"submitted again as #{again.pk}"):
        judging.record_result(runs[0].pk, agent, secrets[0], passed_result(9.0))
    assert Run.objects.get(pk=runs[0].pk).verdict == "internal_error"

