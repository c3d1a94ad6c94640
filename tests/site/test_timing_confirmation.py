"""A run whose times the agent could not confirm (`timing_unconfirmed`, profiler_agent.judge.timing_confirmation)
stays out of everything ranked from run times until an organizer clears it (audited); its page says
what the flag means, in both languages."""
import copy
import html

import pytest
from pydantic import ValidationError

from leaderboard import selectors as board
from submissions.models import AuditEntry, GpuStanding, Run, Standing
from submissions.result_schema import RunResult
from submissions.services import reviewing, standings, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit

ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
EN = {"Accept-Language": "en-US,en;q=0.9"}
CONFIRMATION = {
    "method": "ncu", "kernel_ms": 3.0, "reported_ms": 1.0, "ratio": 1 / 3, "tolerance": 0.1, "calls_profiled": 3,
    "kernels_capped": False, "reference_reported_ms": 2.0, "reference_outside_ms": 2.0, "reference_tolerance": 0.1,
    "confirmed": False,
    "reason": "the candidate's reported median (1 ms) is below the GPU's own record of its kernels (3 ms per call)",
}


def unconfirmed_result(speedup=2.0):
    result = passed_result(speedup=speedup)
    result["flags"] = ["timing_unconfirmed"]
    result["timing"]["confirmation"] = copy.deepcopy(CONFIRMATION)
    return result


def page_text(response):
    return html.unescape(response.content.decode())


@pytest.fixture
def judged_unconfirmed(season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """Alice's accepted submission whose runs (CPU and C500) came back `timing_unconfirmed`."""
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(submission, agent, unconfirmed_result(speedup=2.5))
    reviewing.review_submission(submission, organizer.user, "accepted", reason="fine")
    return submission


def _gpu_row(season, alice, slug):
    return GpuStanding.objects.get(season=season, contestant=alice, gpu_type__slug=slug)


def test_an_unconfirmed_run_is_out_of_every_ranking(season, alice, judged_unconfirmed):
    assert Run.objects.filter(submission=judged_unconfirmed, verdict="passed").count() == 2
    standing = Standing.objects.get(season=season, contestant=alice)
    assert standing.accepted_count == 1  # the review counts; the time does not
    assert standing.best_speedup is None
    for slug in ("cpu", "c500"):
        row = _gpu_row(season, alice, slug)
        assert (row.passed_count, row.geomean_speedup, row.best_speedup) == (0, None, None)
    assert board.passed_speedups(season) == []
    _, rows = board.hardware_comparison(season)
    assert rows[0]["cells"] == [None, None]


def test_an_unconfirmed_speedup_suggests_no_speedup_points(season, judged_unconfirmed):
    season.rubric = "kernel_contest"  # its "clear speedup" bonus is suggested from the runs' speedups
    season.save()
    assert reviewing.prefill(judged_unconfirmed)["clear_speedup"] == 0.0
    Run.objects.filter(submission=judged_unconfirmed).update(flags=["timing_cleared"])
    assert reviewing.prefill(judged_unconfirmed)["clear_speedup"] == 10.0


def test_an_organizer_clears_it_with_a_reason_and_it_counts(client, season, alice, organizer, judged_unconfirmed):
    run = Run.objects.get(submission=judged_unconfirmed, gpu_type__slug="c500")
    client.force_login(organizer.user)
    review = page_text(client.get(f"/organizer/submissions/{judged_unconfirmed.pk}/", headers=EN))
    assert f'id="unconfirmed-{run.pk}"' in review and "below the GPU's own record" in review
    assert f"/organizer/runs/{run.pk}/clear-timing/" in review

    refused = client.post(f"/organizer/runs/{run.pk}/clear-timing/", {"reason": "  "}, headers=EN, follow=True)
    assert "Clearing a time needs a reason." in page_text(refused)
    run.refresh_from_db()
    assert run.flags == ["timing_unconfirmed"]

    cleared = client.post(f"/organizer/runs/{run.pk}/clear-timing/",
                          {"reason": "two streams overlap: the serialized kernel sum overstates it"}, headers=EN)
    assert cleared.status_code == 302
    run.refresh_from_db()
    assert run.flags == ["timing_cleared"]
    entry = AuditEntry.objects.get(action="run.timing_cleared", object_id=str(run.pk))
    assert entry.actor_label == "organizer" and entry.reason.startswith("two streams overlap")
    assert entry.before == {"flags": ["timing_unconfirmed"]}
    assert entry.after["flags"] == ["timing_cleared"] and entry.after["confirmation"]["kernel_ms"] == 3.0

    row = _gpu_row(season, alice, "c500")
    assert (row.passed_count, row.best_speedup) == (1, 2.5) and row.geomean_speedup == pytest.approx(2.5)
    assert _gpu_row(season, alice, "cpu").passed_count == 0  # the other run still waits
    assert Standing.objects.get(season=season, contestant=alice).best_speedup == 2.5
    assert board.passed_speedups(season) == [("c500", 2.5)]
    page = page_text(client.get(f"/organizer/submissions/{judged_unconfirmed.pk}/", headers=EN))
    assert "run.timing_cleared" in page and f'id="unconfirmed-{run.pk}"' not in page

    again = client.post(f"/organizer/runs/{run.pk}/clear-timing/", {"reason": "again"}, headers=EN, follow=True)
    assert f"run #{run.pk} has no unconfirmed time to clear" in page_text(again)
    assert AuditEntry.objects.filter(action="run.timing_cleared").count() == 1


def test_a_cleared_time_never_ranks_above_the_kernels_record(season, alice, organizer, agent_and_token,
                                                              django_capture_on_commit_callbacks):
    """A result whose speedup is above its kernels' record (an agent that did not lower it) is stored
    at the record: clearing its flag ranks that, never the judged process's figure."""
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    result = unconfirmed_result(speedup=6.0)
    result["timing"]["confirmation"].update(reference_kernel_ms=4.5, kernel_speedup=1.5)
    report_all(submission, agent, result)
    reviewing.review_submission(submission, organizer.user, "accepted", reason="fine")
    run = Run.objects.get(submission=submission, gpu_type__slug="c500")
    assert run.speedup == 1.5
    Run.objects.filter(submission=submission).update(flags=["timing_cleared"])
    standings.refresh_for(season, alice, actor_label="test")
    assert Standing.objects.get(season=season, contestant=alice).best_speedup == 1.5


def test_only_organizers_clear(client, alice, judged_unconfirmed):
    run = Run.objects.filter(submission=judged_unconfirmed).first()
    client.force_login(alice.user)
    assert client.post(f"/organizer/runs/{run.pk}/clear-timing/", {"reason": "mine is fine"}).status_code == 403
    run.refresh_from_db()
    assert run.flags == ["timing_unconfirmed"]


def test_the_submission_page_explains_the_flag_in_both_languages(client, organizer, judged_unconfirmed):
    url = f"/submissions/{judged_unconfirmed.pk}/"
    en = page_text(client.get(url, headers=EN))
    assert "Time not confirmed by the GPU's profiler: this run stays out of the standings" in en
    zh = page_text(client.get(url, headers=ZH))
    assert "时间未经 GPU 性能分析器确认：在组织者放行之前，该运行不计入排行榜。" in zh
    run = Run.objects.filter(submission=judged_unconfirmed).first()
    client.force_login(organizer.user)
    client.post(f"/organizer/runs/{run.pk}/clear-timing/", {"reason": "checked"})
    client.logout()
    assert "an organizer cleared it, so it counts" in page_text(client.get(url, headers=EN))


@pytest.mark.parametrize("method, reason", [
    (None, "no device profiler on CPU, and calls under 1 ms are not timed from outside"),
    # timed from outside, but the harness's own work was most of the stretch: not bounded
    ("cpu time", "the harness's own work (making the values, a checksum of each output: 70.0 ms) is 62% of the "
                 "112.5 ms of CPU time the calls took: too much to bound the call"),
])
def test_a_cpu_time_is_marked_not_confirmed_and_still_ranks(client, season, alice, organizer, agent_and_token,
                                                            django_capture_on_commit_callbacks, method, reason):
    agent, _ = agent_and_token
    submission = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                        valid_files())
    result = passed_result(speedup=1.5)
    result["timing"]["confirmation"] = {"method": method, "reported_ms": 2.0 / 1.5, "confirmed": None,
                                        "reason": reason}
    report_all(submission, agent, result)
    reviewing.review_submission(submission, organizer.user, "accepted", reason="fine")
    assert _gpu_row(season, alice, "cpu").passed_count == 1
    assert Standing.objects.get(season=season, contestant=alice).best_speedup == 1.5
    en = page_text(client.get(f"/submissions/{submission.pk}/", headers=EN))
    assert "Time not confirmed by a profiler (CPU: there is no device profiler); it still counts." in en
    zh = page_text(client.get(f"/submissions/{submission.pk}/", headers=ZH))
    assert "时间未经性能分析器确认（CPU：没有设备性能分析器）；仍然计入。" in zh


def test_the_wire_schema_takes_a_confirmation_or_none():
    result = unconfirmed_result()
    assert RunResult.model_validate(result).as_stored()["timing"]["confirmation"]["kernel_ms"] == 3.0
    del result["timing"]["confirmation"]  # older agents send none
    assert RunResult.model_validate(result).as_stored()["timing"]["confirmation"] is None
    result["timing"]["confirmation"] = dict(CONFIRMATION, kernel_ms=-1.0)
    with pytest.raises(ValidationError, match="kernel_ms"):
        RunResult.model_validate(result)


@pytest.mark.parametrize("case_records, stored", [
    # each case confirmed on its own (harness 1.7): the mean of each case within its own record
    ({"small": 4.0, "wide": 1.0}, 2.0),  # sqrt(min(4, 4) * min(1, 1)), above the first case's 1.5
    ({"small": 1.0, "wide": 1.0}, 1.0),  # the second case's figure above its record: lowered to it
    # an older agent's cases, confirmed on the first case alone: that case's record bounds the mean
    (None, 1.5),
])
def test_a_run_of_several_cases_is_bounded_by_each_cases_own_record(
        season, alice, agent_and_token, django_capture_on_commit_callbacks, case_records, stored):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    result = unconfirmed_result(speedup=2.0)
    result["flags"] = []
    result["timing"]["confirmation"].update(confirmed=True, reference_kernel_ms=4.5, kernel_speedup=1.5)
    result["timing"]["cases"] = {
        "small": {"reference_ms": 1.0, "candidate_ms": 0.25, "speedup": 4.0},
        "wide": {"reference_ms": 3.0, "candidate_ms": 3.0, "speedup": 1.0},
    }
    for name, record in (case_records or {}).items():
        result["timing"]["cases"][name].update(kernel_speedup=record, confirmed=True)
    report_all(submission, agent, result)
    run = Run.objects.get(submission=submission, gpu_type__slug="c500")
    assert run.speedup == pytest.approx(stored)
