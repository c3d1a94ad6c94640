"""Which run counts: a submission's ranked figure on a GPU type is the median of its passed runs there
(never the best one), wherever a speedup is ranked or shown as the submission's; noisy timing is flagged."""
import copy
import csv
import html
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import GpuStanding, Run, RunStatus, Standing
from submissions.services import accounts, cancelling, rejudging, reviewing, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import accept, passed_result, report_all, submit

EN = {"Accept-Language": "en-US,en;q=0.9"}
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
# The issue's five judgings of one CPU bundle, in the order a contestant hoping for luck would get them.
JUDGINGS = (0.93, 6.09, 7.74, 7.75, 8.15)


def text(response):
    return html.unescape(response.content.decode())


def rejudge_and_report(submission, organizer, agent, result):
    rejudging.rejudge("submission", submission, organizer.user, "judge it again")
    report_all(submission, agent, result)


@pytest.fixture
def judged_five_times(season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(submission, agent, passed_result(speedup=JUDGINGS[0]))
    for speedup in JUDGINGS[1:]:
        rejudge_and_report(submission, organizer, agent, passed_result(speedup=speedup))
    reviewing.review_submission(submission, organizer.user, "accepted", reason="fine")
    return submission


def test_rejudging_until_lucky_ranks_the_median_everywhere(client, season, alice, organizer, judged_five_times):
    submission = judged_five_times
    assert submission.runs.filter(gpu_type__slug="cpu").count() == 5
    median_run = submission.runs.get(gpu_type__slug="cpu", speedup=7.74)

    # the standings: the contestant's best speedup and the per-GPU rows (ranked by it)
    assert Standing.objects.get(season=season, contestant=alice).best_speedup == 7.74
    for row in GpuStanding.objects.filter(season=season, contestant=alice):
        assert (row.passed_count, row.best_speedup) == (1, 7.74) and row.geomean_speedup == pytest.approx(7.74)

    # the public APIs
    board = client.get("/api/v1/seasons/S1/leaderboard").json()
    assert board["rows"][0]["best_speedup"] == 7.74
    assert client.get("/api/v1/seasons/S1/gpus/cpu/leaderboard").json()[0]["best_speedup"] == 7.74
    cell = client.get("/api/v1/seasons/S1/hardware").json()["rows"][0]["cells"]["cpu"]
    assert cell == {"candidate_median_ms": median_run.candidate_median_ms, "speedup": 7.74, "run": median_run.pk,
                    "runs_counted": 5}
    person = client.get(f"/api/v1/contestants/{alice.pk}").json()["submissions"][0]
    assert person["ranked"]["cpu"] == {"speedup": 7.74, "run": median_run.pk, "runs_counted": 5}
    assert [r["id"] for r in person["runs"] if r["ranked"]] == sorted(
        submission.runs.filter(speedup=7.74).values_list("pk", flat=True), reverse=True)
    assert client.get(f"/api/v1/issues/{submission.issue.code}").json()["submissions"][0]["ranked"]["cpu"]["speedup"] == 7.74

    # the pages: hardware table, submission, issue list and issue page, season charts
    hardware = text(client.get("/seasons/S1/hardware/", headers=EN))
    assert "7.74×" in hardware and "median of 5 runs" in hardware and "8.15×" not in hardware
    page = text(client.get(f"/submissions/{submission.pk}/", headers=EN))
    assert "median of 5 runs" in page
    assert "5 次运行的中位数" in text(client.get(f"/submissions/{submission.pk}/", headers=ZH))
    issues = text(client.get("/issues/", headers=EN))
    assert "7.74×" in issues and "8.15×" not in issues
    assert "8.15×" not in text(client.get(f"/issues/{submission.issue.code}/", headers=EN))
    from leaderboard import selectors as board_selectors
    assert sorted(board_selectors.passed_speedups(season)) == [("c500", 7.74), ("cpu", 7.74)]

    # the organizer's exports
    client.force_login(organizer.user)
    rows = list(csv.DictReader(io.StringIO(b"".join(client.get("/organizer/export/submissions.csv")
                                                   .streaming_content).decode())))
    assert rows[0]["ranked"] == "c500:7.74:5; cpu:7.74:5"
    standings = list(csv.DictReader(io.StringIO(b"".join(client.get("/organizer/export/standings.csv")
                                                        .streaming_content).decode())))
    # the column, not the whole text: a timestamp such as 00:38:58.155992 holds "8.15"
    assert [row["best_speedup"] for row in standings] == ["7.74"]


def test_the_latest_judgement_must_pass_and_the_platform_s_failures_do_not_count(
        season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="GELU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    accept(submission, organizer.user)  # the board's best speedup counts accepted samples only
    report_all(submission, agent, passed_result(speedup=3.0))
    assert Standing.objects.get(contestant=alice).best_speedup == 3.0

    wrong = dict(copy.deepcopy(passed_result()), status="wrong_answer", reason="trial 1: output 0 differs")
    rejudge_and_report(submission, organizer, agent, wrong)  # a rejudge finds it wrong: it no longer ranks
    assert Standing.objects.get(contestant=alice).best_speedup is None

    rejudge_and_report(submission, organizer, agent, passed_result(speedup=2.0))  # right again
    assert Standing.objects.get(contestant=alice).best_speedup == 2.0  # the lower median of 2.0 and 3.0

    # a cancelled rejudge and one the platform failed (internal_error, after its retries) are no judgement
    batch = rejudging.rejudge("submission", submission, organizer.user, "once more")
    for run in batch.runs.all():
        cancelling.cancel_run(run.pk, organizer.user, "not needed")
    rejudging.rejudge("submission", submission, organizer.user, "and again")
    failed = dict(copy.deepcopy(passed_result()), status="internal_error", reason="the agent's disk is full")
    for _ in range(5):
        report_all(submission, agent, failed)
    assert not submission.runs.exclude(status=RunStatus.DONE).exists()
    assert Standing.objects.get(contestant=alice).best_speedup == 2.0


def noisy_result(speedup=2.0, candidate_std_ms=0.6):
    result = passed_result(speedup=speedup)
    result["timing"]["reference"].update(mean_ms=2.0, std_ms=0.1, runs=200)
    result["timing"]["candidate"].update(mean_ms=2.0 / speedup, std_ms=candidate_std_ms, runs=200)
    return result


@pytest.mark.parametrize("headers, note", [
    (EN, "Noisy timing: the per-call times spread 5% (reference) and 60% (candidate) around their medians"),
    (ZH, "计时噪声大：每次调用的时间围绕中位数的离散度为 5%（参考实现）和 60%（优化实现）"),
])
def test_noisy_timing_is_flagged_and_explained(client, season, alice, agent_and_token,
                                               django_capture_on_commit_callbacks, headers, note):
    agent, token = agent_and_token
    noisy = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="A"),
                   valid_files())
    report_all(noisy, agent, noisy_result())
    steady = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="B"),
                    valid_files())
    report_all(steady, agent, noisy_result(candidate_std_ms=0.05))
    assert all(r.flags == ["timing_noisy"] for r in Run.objects.filter(submission=noisy))
    assert all(r.flags == [] for r in Run.objects.filter(submission=steady))

    run = noisy.runs.get(gpu_type__slug="cpu")
    page = text(client.get(f"/submissions/{noisy.pk}/", headers=headers))
    assert f'id="noisy-note-{run.pk}"' in page and note in page
    assert "noisy-note-" not in text(client.get(f"/submissions/{steady.pk}/", headers=headers))
    client.force_login(alice.user)
    api_runs = client.get(f"/api/v1/submissions/{noisy.pk}", headers={"Authorization": f"Bearer {api_token(alice)}"})
    assert {tuple(r["flags"]) for r in api_runs.json()["runs"]} == {("timing_noisy",)}
    assert api_runs.json()["ranked"]["cpu"] == {"speedup": 2.0, "run": run.pk, "runs_counted": 1}  # noisy still counts


def api_token(contestant):
    from submissions.services import accounts

    return accounts.create_api_token(contestant)[1]


def test_the_same_bundle_again_to_the_same_issue_is_refused_in_every_way_in(
        client, season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """Resubmitting exactly the same code would draw another sample of its timing noise, a rejudge the
    contestant orders; the site refuses it (as a judge refuses the same source twice) and says which it was."""
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = valid_files()
    first = submit(django_capture_on_commit_callbacks, alice, issue, files)
    report_all(first, agent, passed_result(speedup=0.93))

    with pytest.raises(submitting.AlreadySubmitted, match=rf"this kernel to issue {issue.code} before, "
                                                          rf"as submission #{first.pk}") as refused:
        submit(django_capture_on_commit_callbacks, alice, issue, dict(files))
    assert refused.value.earlier == first

    _, contestant_token = accounts.create_api_token(alice, "cli")
    api = client.post("/api/v1/submissions", {"issue": issue.code, "files": [
        SimpleUploadedFile(name, data) for name, data in files.items()]},
        headers={"Authorization": f"Bearer {contestant_token}"})
    assert api.status_code == 409 and f"#{first.pk}" in api.json()["detail"], api.content
    client.force_login(alice.user)
    page = client.post("/submit/", {"issue": issue.pk, "files": [SimpleUploadedFile(n, d) for n, d in files.items()]},
                       headers=EN)
    assert f"as submission #{first.pk}" in text(page) and page.status_code == 200
    assert issue.submissions.count() == 1  # nothing stored, no run queued

    # a changed line of code is another kernel
    changed = submit(django_capture_on_commit_callbacks, alice, issue,
                     dict(files, **{"cudacode.py": files["cudacode.py"] + b"\nSCALE = 1\n"}))
    assert changed.pk and changed.runs.exists()


def test_a_bundle_the_platform_never_judged_may_be_sent_again(
        season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = valid_files()
    first = submit(django_capture_on_commit_callbacks, alice, issue, files)
    failed = dict(copy.deepcopy(passed_result()), status="internal_error", reason="the agent's disk is full")
    for _ in range(5):  # every attempt the platform's failure
        report_all(first, agent, failed)
    assert set(first.runs.values_list("verdict", flat=True)) == {"internal_error"}
    again = submit(django_capture_on_commit_callbacks, alice, issue, dict(files))

    for run in again.runs.all():  # an organizer cancels it before any agent starts it: still never judged
        cancelling.cancel_run(run.pk, organizer.user, "wrong queue")
    third = submit(django_capture_on_commit_callbacks, alice, issue, dict(files))
    with pytest.raises(submitting.AlreadySubmitted, match=f"#{third.pk}"):  # queued: being judged
        submit(django_capture_on_commit_callbacks, alice, issue, dict(files))


def test_the_same_kernel_rezipped_or_sent_to_another_issue_joins_the_earlier_ranked_figure(
        client, season, alice, bob, agent_and_token, django_capture_on_commit_callbacks):
    """A readme, a self-test, blank lines, trailing spaces and Windows line endings do not make another kernel,
    nor does another issue of one's own for the same operator: each would draw another sample of the same code's
    timing noise, and the board would show the luckier one. The refusal names the submission whose runs rank."""
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = valid_files()
    first = submit(django_capture_on_commit_callbacks, alice, issue, files)
    report_all(first, agent, passed_result(speedup=4.01))

    cosmetic = dict(files, **{"README.md": b"# my ReLU\n", "run_code.py": b"print('self test')\n",
                              "cudacode.py": files["cudacode.py"].replace(b"\n", b"  \r\n") + b"\n\n"})
    with pytest.raises(submitting.AlreadySubmitted, match=rf"as submission #{first.pk}"):
        submit(django_capture_on_commit_callbacks, alice, issue, cosmetic)

    other_issue = submitting.open_issue(season, alice, title="ReLU again")
    with pytest.raises(submitting.AlreadySubmitted,
                       match=rf"same operator to issue {issue.code}, as submission #{first.pk}") as refused:
        submit(django_capture_on_commit_callbacks, alice, other_issue, cosmetic)
    assert refused.value.earlier == first
    _, token = accounts.create_api_token(alice, "cli")
    api = client.post("/api/v1/submissions", {"issue": other_issue.code, "files": [
        SimpleUploadedFile(name, data) for name, data in cosmetic.items()]},
        headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 409 and f"#{first.pk}" in api.json()["detail"], api.content
    assert other_issue.submissions.count() == 0 and issue.submissions.count() == 1

    # the same kernel for another operator is another submission, and so is another contestant's copy
    other_operator = dict(cosmetic, **{"torchcode.py": files["torchcode.py"].replace(b"relu", b"gelu")})
    assert other_operator["torchcode.py"] != files["torchcode.py"]
    elsewhere = submit(django_capture_on_commit_callbacks, alice, other_issue, other_operator)
    assert elsewhere.runs.exists()
    bobs_issue = submitting.open_issue(season, bob, title="ReLU")
    assert submit(django_capture_on_commit_callbacks, bob, bobs_issue, dict(files)).runs.exists()
