"""Submission modes: ranked (the default), test (correctness only) and benchmark (judged in full, never
ranked). Only ranked submissions rank, are reviewed, count in standings, exports and the dataset; test and
benchmark ones are their owner's and the organizers' alone, each mode with its own rate limit, and neither
is held to the one-kernel rule."""
import copy
import csv
import html
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions import selectors
from submissions.bundles import build_bundle
from submissions.models import Review, Standing, Submission, SubmissionMode
from submissions.services import reviewing, submitting
from submissions.services.accounts import create_api_token
from tests.site.bundle_files import valid_files, zip_of
from tests.site.judging_helpers import accept, hand_out_to_token, passed_result, report_all, submit

EN = {"Accept-Language": "en-US,en;q=0.9"}

# What an agent reports for a test run: the correctness figures, no time (profiler_agent --mode test)
TESTED = {
    "schema": 1, "status": "passed", "flags": [], "device": {"kind": "cpu", "name": "Test CPU"},
    "correctness": {"passed": True, "trials": 3, "max_abs_err": 0.0, "max_rel_err": 0.0, "atol": 1e-4, "rtol": 1e-4},
    "timing": {"reference": {"median_ms": None}, "candidate": {"median_ms": None}, "speedup": None},
    "variants": {}, "logs": {"compile": "", "stdout": "", "stderr": "[profiler_agent] test mode\n"},
}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def text(response):
    return html.unescape(response.content.decode())


def export_ids(client):
    body = b"".join(client.get("/organizer/export/submissions.csv").streaming_content).decode()
    return {int(row["id"]) for row in csv.DictReader(io.StringIO(body))}


@pytest.fixture
def ranked_and_accepted(season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(submission, agent, passed_result(speedup=2.0))
    accept(submission, organizer.user)
    return submission


def test_a_test_run_never_changes_a_standing_the_review_queue_an_export_or_the_dataset(
        client, season, alice, organizer, agent_and_token, ranked_and_accepted, django_capture_on_commit_callbacks):
    agent, token = agent_and_token
    standing = Standing.objects.get(season=season, contestant=alice)
    before = (standing.best_speedup, standing.submission_count, standing.accepted_count, standing.total_score)
    assert before[:3] == (2.0, 1, 1)

    tested = submit(django_capture_on_commit_callbacks, alice, ranked_and_accepted.issue, valid_files(),
                    mode=SubmissionMode.TEST)
    # the agent is told to judge it for correctness only
    run = tested.runs.order_by("pk").first()
    hand_out_to_token(run, token)
    answer = client.post(f"/api/v1/agent/runs/{run.pk}/start", {"attempt": run.attempts},
                         content_type="application/json", headers=bearer(token)).json()
    assert answer["options"]["mode"] == "test" and answer["options"]["correctness_only"] is True
    ranked_run = ranked_and_accepted.runs.first()
    from submissions.services import judging
    assert "correctness_only" not in judging.judging_options(ranked_run)
    client.post(answer["result_url"], copy.deepcopy(TESTED), content_type="application/json",
                headers={**bearer(token), "X-Job-Secret": answer["job_secret"]})
    report_all(tested, agent, copy.deepcopy(TESTED))
    tested.refresh_from_db()
    assert {(r.verdict, r.speedup) for r in tested.runs.all()} == {("passed", None)}

    standing.refresh_from_db()
    assert (standing.best_speedup, standing.submission_count, standing.accepted_count, standing.total_score) == before
    assert tested not in selectors.review_queue(include_reviewed=True)
    assert tested.abuse_flags.count() == 0
    with pytest.raises(reviewing.ReviewRefused, match="only ranked submissions are"):
        reviewing.review_submission(tested, organizer.user, "accepted", acceptance_override="try")
    assert not Review.objects.filter(submission=tested).exists()
    assert [s.pk for s, _ in selectors.accepted_samples(season)] == [ranked_and_accepted.pk]
    assert selectors.submission_state(tested) == selectors.SubmissionState.PASSED

    client.force_login(organizer.user)
    assert export_ids(client) == {ranked_and_accepted.pk}
    queue = text(client.get("/organizer/?reviewed=1", headers=EN))
    assert f"#{tested.pk}" not in queue
    # the organizer sees it, marked as a test
    page = text(client.get(f"/submissions/{tested.pk}/", headers=EN))
    assert "mode-test" in page and "A test submission" in page
    review = text(client.get(f"/organizer/submissions/{tested.pk}/", headers=EN))
    assert "A test submission is never reviewed" in review and "Record the decision" not in review
    assert "Record the decision" in text(client.get(f"/organizer/submissions/{ranked_and_accepted.pk}/", headers=EN))


def test_a_benchmark_is_judged_in_full_but_seen_by_its_owner_and_the_organizers_alone(
        client, season, alice, bob, organizer, agent_and_token, ranked_and_accepted,
        django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = ranked_and_accepted.issue
    benchmark = submit(django_capture_on_commit_callbacks, alice, issue, valid_files(), mode=SubmissionMode.BENCHMARK)
    report_all(benchmark, agent, passed_result(speedup=9.5))  # faster than the ranked 2.0: it must show nowhere
    assert Standing.objects.get(season=season, contestant=alice).best_speedup == 2.0
    from leaderboard import selectors as board_selectors
    assert {speedup for _, speedup in board_selectors.passed_speedups(season)} == {2.0}

    url = f"/submissions/{benchmark.pk}/"
    assert client.get(url).status_code == 404  # anonymous
    assert client.get(f"/submissions/{benchmark.pk}/charts/").status_code == 404
    assert "9.50×" not in text(client.get(f"/issues/{issue.code}/", headers=EN))
    assert benchmark.pk not in [s["id"] for s in client.get(f"/api/v1/issues/{issue.code}").json()["submissions"]]
    assert benchmark.pk not in [s["id"] for s in client.get(f"/api/v1/contestants/{alice.pk}").json()["submissions"]]
    assert "9.50×" not in text(client.get("/issues/", headers=EN))
    _, bob_token = create_api_token(bob)
    assert client.get(f"/api/v1/submissions/{benchmark.pk}", headers=bearer(bob_token)).status_code == 404
    client.force_login(bob.user)
    assert client.get(url).status_code == 404
    assert f"#{benchmark.pk}" not in text(client.get(f"/contestants/{alice.pk}/", headers=EN))

    _, alice_token = create_api_token(alice)
    own = client.get(f"/api/v1/submissions/{benchmark.pk}", headers=bearer(alice_token)).json()
    assert own["mode"] == "benchmark" and own["ranked"]["cpu"]["speedup"] == 9.5 and own["state"] == "passed"
    client.force_login(alice.user)
    page = text(client.get(url, headers=EN))
    assert "9.50×" in page and "mode-benchmark" in page and "A benchmark submission" in page
    assert "mode-benchmark" in text(client.get(f"/issues/{issue.code}/", headers=EN))
    client.force_login(organizer.user)
    assert client.get(url).status_code == 200
    assert benchmark.pk not in export_ids(client)


def _post(client, token, issue, mode=None, files=None):
    data = {"issue": issue.code, "files": [SimpleUploadedFile("b.zip", zip_of(files or valid_files()))]}
    if mode is not None:
        data["mode"] = mode
    return client.post("/api/v1/submissions", data, headers=bearer(token))


def test_each_mode_has_its_own_rate_limit(client, settings, season, alice):
    settings.SUBMISSIONS_PER_HOUR = 1
    settings.TEST_SUBMISSIONS_PER_HOUR = 2
    settings.BENCHMARK_SUBMISSIONS_PER_HOUR = 1
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = create_api_token(alice)
    assert _post(client, token, issue).status_code == 201
    refused = _post(client, token, issue, "ranked")
    assert refused.status_code == 429 and "1 submission in season S1 in the last hour" in refused.json()["detail"]
    assert [_post(client, token, issue, "test").status_code for _ in range(2)] == [201, 201]
    refused = _post(client, token, issue, "test")
    assert refused.status_code == 429 and refused["Retry-After"]
    assert "2 test submissions in season S1 in the last hour" in refused.json()["detail"]
    assert _post(client, token, issue, "benchmark").status_code == 201
    refused = _post(client, token, issue, "benchmark")
    assert refused.status_code == 429 and "1 benchmark submission in season S1" in refused.json()["detail"]
    assert sorted(Submission.objects.values_list("mode", flat=True)) == ["benchmark", "ranked", "test", "test"]


def test_a_kernel_may_be_tested_then_ranked_but_ranked_once(season, alice, agent_and_token,
                                                          django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = valid_files()
    tested = submit(django_capture_on_commit_callbacks, alice, issue, files, mode=SubmissionMode.TEST)
    report_all(tested, agent, copy.deepcopy(TESTED))
    benchmark = submit(django_capture_on_commit_callbacks, alice, issue, files, mode=SubmissionMode.BENCHMARK)
    report_all(benchmark, agent, passed_result())
    ranked = submit(django_capture_on_commit_callbacks, alice, issue, files)
    assert ranked.mode == SubmissionMode.RANKED
    with pytest.raises(submitting.AlreadySubmitted) as refused:
        submit(django_capture_on_commit_callbacks, alice, issue, files)
    assert refused.value.earlier == ranked
    # a test of the ranked kernel, after it, is no second figure either
    again = submit(django_capture_on_commit_callbacks, alice, issue, files, mode=SubmissionMode.TEST)
    assert again.kernel_digest == ranked.kernel_digest


def test_an_unknown_mode_is_refused(season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    with pytest.raises(submitting.SubmissionRefused, match="unknown mode 'fastest'; one of ranked, test, benchmark, "
                                                           "profile"):
        submitting.create_submission(alice, issue, build_bundle(valid_files()), mode="fastest")
    assert not Submission.objects.exists()


def test_the_api_takes_and_shows_the_mode_and_documents_it(client, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = create_api_token(alice)
    default = _post(client, token, issue).json()
    assert default["mode"] == "ranked"
    tested = _post(client, token, issue, "test")
    assert tested.status_code == 201 and tested.json()["mode"] == "test"
    wrong = _post(client, token, issue, "fastest")
    assert wrong.status_code == 422 and "mode" in wrong.content.decode()
    listed = client.get("/api/v1/submissions", headers=bearer(token)).json()["rows"]
    assert [(row["id"], row["mode"]) for row in listed] == [(tested.json()["id"], "test"), (default["id"], "ranked")]

    document = client.get("/api/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    for name in ("SubmissionOut", "SubmissionSummaryOut"):
        assert schemas[name]["properties"]["mode"]["enum"] == ["ranked", "test", "benchmark", "profile"]
        assert "correctness trials only" in schemas[name]["properties"]["mode"]["description"]
    form = document["paths"]["/api/v1/submissions"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    form = schemas[form["$ref"].rsplit("/", 1)[1]] if "$ref" in form else form
    assert form["properties"]["mode"]["enum"] == ["ranked", "test", "benchmark", "profile"]
    assert form["properties"]["mode"]["default"] == "ranked"


def test_the_submit_page_offers_the_modes(client, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    client.force_login(alice.user)
    page = text(client.get("/submit/", headers=EN))
    assert 'name="mode"' in page and 'value="benchmark"' in page and "Correctness trials only" not in page
    assert "Test: correctness trials only" in page
    files = [SimpleUploadedFile(name, data) for name, data in valid_files().items()]
    response = client.post("/submit/", {"issue": issue.pk, "files": files, "mode": "test"})
    assert response.status_code == 302, text(response)
    submission = Submission.objects.get()
    assert submission.mode == SubmissionMode.TEST
    assert "mode-test" in text(client.get("/account/", headers=EN))


def test_the_fleet_page_counts_unfinished_runs_per_mode(client, season, alice, organizer,
                                                        django_capture_on_commit_callbacks):
    issue = submitting.open_issue(season, alice, title="ReLU")
    submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    for _ in range(2):
        submit(django_capture_on_commit_callbacks, alice, issue, valid_files(), mode=SubmissionMode.TEST)
    client.force_login(organizer.user)
    queues = {q["gpu_type"]: q for q in client.get("/organizer/fleet.json").json()["queues"]}
    assert queues["cpu"]["unfinished_runs_by_mode"] == {"ranked": 1, "test": 2, "benchmark": 0, "profile": 0}
    page = text(client.get("/organizer/fleet/", headers=EN))
    assert "Unfinished runs by mode" in page and "Test 2" in page


def test_a_season_rejudge_judges_the_ranked_submissions_only(season, alice, organizer,
                                                            django_capture_on_commit_callbacks):
    from submissions.services import rejudging

    issue = submitting.open_issue(season, alice, title="ReLU")
    ranked = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    tested = submit(django_capture_on_commit_callbacks, alice, issue, valid_files(), mode=SubmissionMode.TEST)
    with django_capture_on_commit_callbacks(execute=True):
        rejudging.rejudge("season", season, organizer.user, "new harness")
    assert ranked.runs.filter(rejudge__isnull=False).count() == 2
    assert not tested.runs.filter(rejudge__isnull=False).exists()
    with django_capture_on_commit_callbacks(execute=True):
        rejudging.rejudge("submission", tested, organizer.user, "judge this one again")
    assert tested.runs.filter(rejudge__isnull=False).count() == 2


def test_abuse_flags_are_for_ranked_submissions_alone(season, alice, bob, django_capture_on_commit_callbacks):
    alices = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                    valid_files())
    bobs_issue = submitting.open_issue(season, bob, title="ReLU too")
    tested = submit(django_capture_on_commit_callbacks, bob, bobs_issue, valid_files(), mode=SubmissionMode.TEST)
    ranked = submit(django_capture_on_commit_callbacks, bob, bobs_issue, valid_files())
    assert not tested.abuse_flags.exists()
    # the same code ranked is flagged against Alice's, never against Bob's own test
    assert {(f.kind, f.other_submission_id) for f in ranked.abuse_flags.all()} >= {("near_copy", alices.pk)}
    assert not ranked.abuse_flags.filter(other_submission=tested).exists()
