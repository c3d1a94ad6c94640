"""The final system test of a season: after its end an organizer has every counted submission judged
again (a rejudge's runs, on the final queue agents read before every other); the final standings come from those runs alone, the
public board says provisional, then final, and the organizer compares both standings."""
import datetime

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from submissions import queueing
from submissions.models import AuditEntry, FinalSystemTest, Run, RunStatus, Season, Standing
from submissions.services import final_system_tests, judging, reviewing, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import hand_out, passed_result, submit

pytestmark = pytest.mark.django_db


def _report(capture, run, agent, result):
    """An agent judges the run; its report commits (the final system test settles after the commit)."""
    hand_out(run, agent)
    run.refresh_from_db()
    _, secret = judging.start_run(run.pk, agent, run.attempts)
    with capture(execute=True):
        judging.record_result(run.pk, agent, secret, result)


def _failed_result():
    result = passed_result(1.0)
    result["status"] = "wrong_answer"
    result["correctness"]["passed"] = False
    return result


def _accepted(capture, contestant, season, organizer, agent, speedup, points, title):
    issue = submitting.open_issue(season, contestant, title=title)
    submission = submit(capture, contestant, issue, valid_files())
    for run in submission.runs.order_by("pk"):
        _report(capture, run, agent, passed_result(speedup))
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": points},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: accepted whatever its flags")
    return submission


@pytest.fixture
def contest(season, alice, bob, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """Alice: two accepted issues (5 points each, 3.0x), ranked first; Bob: two (3 points each, 2.0x),
    second. A rejected submission of Bob's and Alice's earlier accepted version of an issue do not count."""
    agent, _ = agent_and_token
    capture = django_capture_on_commit_callbacks
    alice_first = _accepted(capture, alice, season, organizer, agent, 3.0, 5, "Alice's op one")
    issue = alice_first.issue
    newer = submit(capture, alice, issue, valid_files())  # a newer accepted version of the same issue counts
    for run in newer.runs.order_by("pk"):
        _report(capture, run, agent, passed_result(3.0))
    reviewing.review_submission(newer, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: accepted whatever its flags")
    alice_second = _accepted(capture, alice, season, organizer, agent, 3.0, 5, "Alice's op two")
    bob_first = _accepted(capture, bob, season, organizer, agent, 2.0, 3, "Bob's op one")
    bob_second = _accepted(capture, bob, season, organizer, agent, 2.0, 3, "Bob's op two")
    rejected = submit(capture, bob, bob_first.issue, valid_files())
    for run in rejected.runs.order_by("pk"):
        _report(capture, run, agent, passed_result(9.0))
    reviewing.review_submission(rejected, organizer.user, "rejected", reason="test data: rejected")
    Season.objects.filter(pk=season.pk).update(ends_at=timezone.now() - datetime.timedelta(minutes=1))
    season.refresh_from_db()
    return {"season": season, "agent": agent, "capture": capture,
            "counted": [newer, alice_second, bob_first, bob_second], "not_counted": [alice_first, rejected],
            "alice_failing": alice_second}


def _start(contest, organizer, reason="final system test of S1"):
    with contest["capture"](execute=True):
        return final_system_tests.start(contest["season"], reason, actor=organizer.user)


def _ranks(season):
    return {s.contestant.display_name: (s.rank, s.accepted_count, s.best_speedup)
            for s in final_system_tests.rule_of(season).assign_ranks(
                list(Standing.objects.filter(season=season).select_related("contestant")))}


def test_refused_before_the_end_and_without_a_reason(contest, organizer):
    season = contest["season"]
    with pytest.raises(final_system_tests.FinalTestRefused, match="reason"):
        final_system_tests.start(season, "   ", actor=organizer.user)
    Season.objects.filter(pk=season.pk).update(ends_at=timezone.now() + datetime.timedelta(hours=1))
    with pytest.raises(final_system_tests.FinalTestRefused, match="has not ended"):
        final_system_tests.start(season, "too early", actor=organizer.user)
    Season.objects.filter(pk=season.pk).update(ends_at=None)
    with pytest.raises(final_system_tests.FinalTestRefused, match="has not ended"):
        final_system_tests.start(season, "no end", actor=organizer.user)
    assert not FinalSystemTest.objects.exists()


def test_queues_one_run_per_counted_submission_and_gpu_type_on_the_final_queue(contest, organizer):
    test = _start(contest, organizer)
    runs = list(test.rejudge.runs.select_related("gpu_type"))
    judged_types = {s.pk: {r.gpu_type_id for r in s.runs.filter(rejudge__isnull=True)} for s in contest["counted"]}
    assert sorted((r.submission_id, r.gpu_type_id) for r in runs) == sorted(
        (pk, gpu) for pk, types in judged_types.items() for gpu in types)
    assert len(runs) >= len(contest["counted"])
    assert not {r.submission_id for r in runs} & {s.pk for s in contest["not_counted"]}
    for run in runs:  # on the final queue, which agents read before every other
        assert run.status == RunStatus.QUEUED and run.final_test and run.queue_name == run.gpu_type.final_queue_name
        assert run.rq_job_id in queueing.judging_queue(run.gpu_type.final_queue_name).get_job_ids()
        for other in (run.gpu_type.queue_name, run.gpu_type.rejudge_queue_name):
            assert run.rq_job_id not in queueing.judging_queue(other).get_job_ids()
    with pytest.raises(final_system_tests.FinalTestRefused, match="started already"):
        final_system_tests.start(contest["season"], "again", actor=organizer.user)
    assert test.rejudge.runs.count() == len(runs)


def test_progress_and_final_standings_from_the_final_runs(contest, organizer):
    season, agent = contest["season"], contest["agent"]
    provisional = _ranks(season)
    assert provisional["Alice"][:2] == (1, 2) and provisional["Bob"][:2] == (2, 2)
    test = _start(contest, organizer)
    runs = list(test.rejudge.runs.order_by("pk"))
    assert final_system_tests.progress(test) == (0, len(runs), 0)
    failing = contest["alice_failing"].pk
    for number, run in enumerate(runs, start=1):
        result = _failed_result() if run.submission_id == failing else passed_result(
            2.5 if run.submission.contestant.display_name == "Alice" else 2.2)
        _report(contest["capture"], run, agent, result)
        test.refresh_from_db()
        if number < len(runs):  # the board stays the provisional one while the runs arrive
            assert final_system_tests.progress(test)[0] == number and not test.is_finished
            assert _ranks(season) == provisional
    failures = sum(1 for r in runs if r.submission_id == failing)
    assert final_system_tests.progress(test) == (len(runs), len(runs), failures)
    assert test.is_finished
    season.refresh_from_db()
    assert season.final_standings_at is not None and season.standings_status == "final"
    final = _ranks(season)
    # Alice's second op failed its final run: it counts no more, and Bob climbs
    assert final["Bob"] == (1, 2, 2.2) and final["Alice"] == (2, 1, 2.5)
    rows = {row["contestant"]: row for row in final_system_tests.comparison(test)}
    assert rows["Alice"] == {"contestant": "Alice", "rank_before": 1, "rank_after": 2, "speedup_before": 3.0,
                             "speedup_after": 2.5, "rank_change": -1, "unconfirmed_runs": []}
    assert rows["Bob"]["rank_before"] == 2 and rows["Bob"]["rank_after"] == 1 and rows["Bob"]["rank_change"] == 1
    assert [r["contestant"] for r in test.final] == ["Bob", "Alice"]
    assert [r["contestant"] for r in test.provisional] == ["Alice", "Bob"]


def _finish_all(contest, test, failing=()):
    for run in test.rejudge.runs.order_by("pk"):
        result = _failed_result() if run.submission_id in failing else passed_result(2.0)
        _report(contest["capture"], run, contest["agent"], result)
    test.refresh_from_db()


def _board(client, season):
    response = client.get(f"/seasons/{season.code}/leaderboard/")
    assert response.status_code == 200
    return response.content.decode()


def test_public_board_and_json_say_provisional_then_final(contest, organizer, client):
    season = contest["season"]
    Season.objects.filter(pk=season.pk).update(ends_at=timezone.now() + datetime.timedelta(hours=1))
    page = _board(client, season)
    assert 'id="standings-status"' not in page
    assert client.get(f"/api/v1/seasons/{season.code}/leaderboard").json()["standings_status"] == "live"
    # the end passes with no change of the board: the label follows the clock all the same
    Season.objects.filter(pk=season.pk).update(ends_at=timezone.now() - datetime.timedelta(seconds=1))
    page = _board(client, season)
    assert "Provisional standings" in page and "Final standings" not in page
    assert client.get(f"/api/v1/seasons/{season.code}/leaderboard").json()["standings_status"] == "provisional"
    test = _start(contest, organizer)
    _finish_all(contest, test, failing={contest["alice_failing"].pk})
    page = _board(client, season)
    assert "Final standings" in page and "Provisional standings" not in page
    answer = client.get(f"/api/v1/seasons/{season.code}/leaderboard").json()
    assert answer["standings_status"] == "final"
    assert [(r["contestant"], r["rank"]) for r in answer["rows"]] == [("Bob", 1), ("Alice", 2)]
    client.cookies["django_language"] = "zh-hans"
    assert 'id="standings-status"' in _board(client, season)


def test_organizer_page_starts_shows_progress_and_compares(contest, organizer, client):
    season = contest["season"]
    client.force_login(organizer.user)
    url = f"/organizer/seasons/{season.code}/final-system-test/"
    page = client.get(url).content.decode()
    assert 'id="start-final-test"' in page
    refused = client.post(url + "start/", {"reason": ""}, follow=True).content.decode()
    assert "needs a reason" in refused and not FinalSystemTest.objects.exists()
    with contest["capture"](execute=True):
        started = client.post(url + "start/", {"reason": "the season is over"}, follow=True).content.decode()
    test = FinalSystemTest.objects.get()
    total = test.rejudge.runs.count()
    assert f"{total} runs queued" in started and f"0 of {total} runs judged, 0 failed" in started
    _finish_all(contest, test, failing={contest["alice_failing"].pk})
    page = client.get(url).content.decode()
    failed = final_system_tests.progress(test)[2]
    assert f"{total} of {total} runs judged, {failed} failed" in page and failed > 0
    assert 'id="failed-runs"' in page and "Final standings" in page
    assert "▲1" in page and "▼1" in page  # Bob climbs, Alice falls
    assert f'href="{url}"' in client.get("/organizer/seasons/").content.decode()


def test_audited_with_the_reason(contest, organizer):
    test = _start(contest, organizer, reason="season over: system tests")
    started = AuditEntry.objects.get(action="season.final_system_test_started")
    assert started.reason == "season over: system tests" and started.actor == organizer.user
    assert started.after["final_system_test"] == test.pk
    assert sorted(started.after["submissions"]) == sorted(s.pk for s in contest["counted"])
    _finish_all(contest, test, failing={contest["alice_failing"].pk})
    finished = AuditEntry.objects.get(action="season.final_system_test_finished")
    assert finished.reason == "season over: system tests" and finished.after["failed_runs"] > 0
    # the standings' changes it made are audited too, naming the final system test
    assert AuditEntry.objects.filter(action="standing.changed", actor_label="final system test").exists()


def test_management_command(contest, capsys):
    season = contest["season"]
    with pytest.raises(CommandError, match="reason"):
        call_command("final_system_test", season.code)
    with pytest.raises(CommandError, match="does not exist"):
        call_command("final_system_test", "NOPE", "--reason", "x")
    with pytest.raises(CommandError, match="no final system test"):
        call_command("final_system_test", season.code, "--status")
    with contest["capture"](execute=True):
        call_command("final_system_test", season.code, "--reason", "season over")
    test = FinalSystemTest.objects.get()
    total = test.rejudge.runs.count()
    assert f"0/{total} runs judged, 0 failed (running)" in capsys.readouterr().out
    assert AuditEntry.objects.get(action="season.final_system_test_started").actor_label == "manage.py"
    _finish_all(contest, test)
    call_command("final_system_test", season.code, "--status")
    assert f"{total}/{total} runs judged, 0 failed (final)" in capsys.readouterr().out


def test_waits_for_the_second_judgings_of_its_runs(contest, organizer):
    """A season that has every passed result judged twice: the final standings wait for the second
    judgings of the final runs, which a host other than the first takes."""
    from tests.site.test_second_judging import online_host

    season = contest["season"]
    Season.objects.filter(pk=season.pk).update(second_judging="every_passed")
    other, _ = online_host("other-host")
    test = _start(contest, organizer)
    for run in test.rejudge.runs.order_by("pk"):
        _report(contest["capture"], run, contest["agent"], passed_result(2.0))
    confirmations = list(Run.objects.filter(confirms__rejudge=test.rejudge).order_by("pk"))
    assert len(confirmations) == test.rejudge.runs.count()
    test.refresh_from_db()
    assert not test.is_finished and final_system_tests.progress(test)[0] == test.rejudge.runs.count()
    for number, run in enumerate(confirmations, start=1):
        _report(contest["capture"], run, other, passed_result(2.0))
        test.refresh_from_db()
        assert test.is_finished == (number == len(confirmations))


def test_the_sweeper_settles_a_test_whose_settling_was_missed(contest, organizer):
    from submissions.services import recovery

    test = _start(contest, organizer)
    Run.objects.filter(rejudge=test.rejudge).update(status=RunStatus.DONE, verdict="passed", speedup=2.0)
    test.refresh_from_db()
    assert not test.is_finished  # no report came through the judging path
    recovery.sweep_runs()
    test.refresh_from_db()
    assert test.is_finished and Season.objects.get(pk=contest["season"].pk).standings_status == "final"


def test_a_frozen_board_is_not_called_final_before_its_thaw(contest, organizer, client):
    """The public sees the freeze's snapshot, not the final standings: final only once it thaws."""
    from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard

    season = contest["season"]
    freeze_scoreboard(season, organizer.user, reason="last hour")
    test = _start(contest, organizer)
    _finish_all(contest, test, failing={contest["alice_failing"].pk})
    page = _board(client, season)
    assert "Final standings" not in page and "shown when the scoreboard thaws" in page
    unfreeze_scoreboard(Season.objects.get(pk=season.pk), organizer.user, reason="results")
    page = _board(client, season)
    assert "Final standings" in page and "Provisional standings" not in page


def test_a_board_frozen_after_the_final_test_finished_says_its_ranks_are_final(contest, organizer, client):
    """Frozen again once the final system test had finished, the board shows the final figures: it said
    "Provisional standings … the final standings are shown when the scoreboard thaws" above them."""
    from leaderboard.services import freeze_scoreboard

    season = contest["season"]
    test = _start(contest, organizer)
    _finish_all(contest, test, failing={contest["alice_failing"].pk})
    freeze_scoreboard(Season.objects.get(pk=season.pk), organizer.user, reason="awards ceremony")
    page = _board(client, season)
    assert "Provisional standings" not in page and "shown when the scoreboard thaws" not in page
    status = page.split('id="standings-status"')[1].split("</p>")[0]
    assert "Final standings" in status and "these ranks are final" in status
    assert "changes since the freeze are shown when it thaws" in status


@pytest.mark.parametrize("language, words", [
    ("en", "passed, but its time is not confirmed: it ranks no speedup until an organizer clears it"),
    ("zh-hans", "通过了，但其时间未经确认：在组织者放行之前，它不计入任何加速比"),
])
def test_a_final_run_whose_time_is_unconfirmed_says_why_its_speedup_is_missing(contest, organizer, client,
                                                                                language, words):
    """'Speedup after' reads "—" for a contestant whose final runs passed flagged timing_unconfirmed: the
    page says which runs and why, linking to their review."""
    season = contest["season"]
    test = _start(contest, organizer)
    bob_runs = set(test.rejudge.runs.filter(submission__contestant__display_name="Bob").values_list("pk", flat=True))
    for run in test.rejudge.runs.order_by("pk"):
        result = passed_result(2.0)
        if run.pk in bob_runs:
            result["flags"] = ["timing_unconfirmed"]
        _report(contest["capture"], run, contest["agent"], result)
    client.force_login(organizer.user)
    page = client.get(f"/organizer/seasons/{season.code}/final-system-test/",
                      headers={"Accept-Language": language}).content.decode()
    table = page.split('id="comparison"', 1)[1].split("</table>", 1)[0]
    bob = table.split("Bob", 1)[1].split("</tr>", 1)[0]
    alice = table.split("Alice", 1)[1].split("</tr>", 1)[0]
    assert all(f"#{pk} " in bob for pk in bob_runs) and words in bob
    assert "unconfirmed-final" not in alice
