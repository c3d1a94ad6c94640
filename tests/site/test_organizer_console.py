"""The organizer console over HTTP: queue (flags first), review page, decisions, rejudge, CSV exports."""
import csv
import io

from submissions.exports import EXPORTS
from submissions.models import AuditEntry, Rejudge, Run, Standing
from submissions.services import accounts, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit
from tests.site.test_abuse_flags import RENAMED_TORCHCODE


def judged(capture, agent, contestant, issue, files, speedup=2.0, **kwargs):
    submission = submit(capture, contestant, issue, files, **kwargs)
    report_all(submission, agent, passed_result(speedup=speedup))
    return submission


def csv_rows(response):
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_queue_lists_finished_submissions_flagged_first(client, season, alice, bob, organizer, agent_and_token,
                                                        django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    capture = django_capture_on_commit_callbacks
    plain = judged(capture, agent, alice, submitting.open_issue(season, alice, title="ReLU"), valid_files())
    flagged = judged(capture, agent, bob, submitting.open_issue(season, bob, title="ReLU too"),
                     dict(valid_files(), **{"torchcode.py": RENAMED_TORCHCODE}))
    pending = submit(capture, alice, submitting.open_issue(season, alice, title="Unjudged"),
                     dict(valid_files(), **{"readme.md": b"x"}))
    client.force_login(organizer.user)
    page = client.get("/organizer/").content.decode()
    assert page.index(f"#{flagged.pk}<") < page.index(f"#{plain.pk}<")
    assert f"#{pending.pk}<" not in page and "Same operator submitted again" in page
    only_flagged = client.get("/organizer/?flagged=1").content.decode()
    assert f"#{flagged.pk}<" in only_flagged and f"#{plain.pk}<" not in only_flagged


def test_review_page_shows_code_side_by_side_metrics_flags_and_prefilled_rubric(
        client, season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    submission = judged(django_capture_on_commit_callbacks, agent, alice,
                        submitting.open_issue(season, alice, title="ReLU"), valid_files(), speedup=3.25)
    client.force_login(organizer.user)
    page = client.get(f"/organizer/submissions/{submission.pk}/").content.decode()
    assert "<h3>torchcode.py</h3>" in page and "<h3>cudacode.py</h3>" in page
    assert '<span class="k">class</span>' in page  # highlighted
    assert "3.25×" in page and "0.500" in page and "1.50" in page  # speedup, TFLOP/s, GB/s
    assert 'name="points_execution_time" value="5.0"' in page and 'name="points_ground_truth" value="0.0"' in page
    assert "run.verdict" in page  # audit entries of the runs


def test_accept_reject_and_override_through_the_form(client, season, alice, organizer, agent_and_token,
                                                     django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    submission = judged(django_capture_on_commit_callbacks, agent, alice,
                        submitting.open_issue(season, alice, title="ReLU"), valid_files())
    client.force_login(organizer.user)
    url = f"/organizer/submissions/{submission.pk}/review/"
    points = {"points_ground_truth": "2", "points_execution_time": "5", "points_throughput": "4",
              "points_bandwidth": "3", "points_llm_prompt": "0"}
    refused = client.post(url, dict(points, decision="accepted"))
    assert refused.status_code == 400 and "give a reason for the override" in refused.content.decode()
    assert not submission.reviews.exists()
    accepted = client.post(url, dict(points, decision="accepted", reason="ok", override_reason="GT checked by hand"))
    assert accepted.status_code == 302
    assert Standing.objects.get(contestant=alice).base_score == 14
    missing_reason = client.post(url, {"decision": "rejected"})
    assert missing_reason.status_code == 400 and "rejection needs a reason" in missing_reason.content.decode()
    client.post(url, {"decision": "rejected", "reason": "duplicate of #1"})
    assert Standing.objects.get(contestant=alice).accepted_count == 0
    page = client.get(f"/organizer/submissions/{submission.pk}/").content.decode()
    for text in ("review.accepted", "score.overridden", "GT checked by hand", "review.rejected", "duplicate of #1",
                 "standing.changed"):
        assert text in page


def test_rejudge_makes_new_runs_and_reports_progress(client, season, alice, organizer, agent_and_token,
                                                      django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    first = judged(django_capture_on_commit_callbacks, agent, alice, issue, valid_files())
    old_runs = set(first.runs.values_list("pk", "verdict"))
    client.force_login(organizer.user)
    assert "needs a reason" in client.post(f"/organizer/issues/{issue.code}/rejudge/", {"reason": ""},
                                           follow=True).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/organizer/issues/{issue.code}/rejudge/", {"reason": "new agent version"})
    batch = Rejudge.objects.get()
    assert response.url == f"/organizer/rejudges/{batch.pk}/"
    assert "0 of 2 runs finished" in client.get(response.url).content.decode()
    assert set(Run.objects.filter(pk__in=[pk for pk, _ in old_runs]).values_list("pk", "verdict")) == old_runs
    report_all(first, agent, passed_result(speedup=2.2))
    assert "2 of 2 runs finished" in client.get(response.url).content.decode()
    assert first.runs.count() == 4
    assert AuditEntry.objects.filter(action="submission.rejudged", reason="new agent version").count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/organizer/seasons/S1/rejudge/", {"reason": "all again"})
    assert first.runs.count() == 6


def test_csv_exports(client, season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    submission = judged(django_capture_on_commit_callbacks, agent, alice,
                        submitting.open_issue(season, alice, title="ReLU"), valid_files())
    client.force_login(organizer.user)
    client.post(f"/organizer/submissions/{submission.pk}/review/",
                {"decision": "accepted", "reason": "fine", "points_execution_time": "5", "points_throughput": "4",
                 "points_bandwidth": "3", "points_ground_truth": "0", "points_llm_prompt": "0"})
    (row,) = csv_rows(client.get("/organizer/export/submissions.csv?season=S1"))
    assert row["id"] == str(submission.pk) and "cpu:passed:2.0" in row["runs"]
    (review,) = csv_rows(client.get("/organizer/export/reviews.csv"))
    assert (review["decision"], review["base_score"], review["reviewer"]) == ("accepted", "12.0", "organizer")
    (standing,) = csv_rows(client.get("/organizer/export/standings.csv?season=S1"))
    assert (standing["contestant"], standing["rank"], standing["accepted_count"]) == ("Alice", "1", "1")
    actions = [r["action"] for r in csv_rows(client.get("/organizer/export/audit.csv"))]
    assert "review.accepted" in actions and actions.count("run.verdict") == 2
    assert client.get("/organizer/export/passwords.csv").status_code == 404
    assert client.get("/organizer/export/reviews.csv?season=S9").status_code == 404


FORMULA_NAME = '=HYPERLINK("http://evil.example","Bob")'
# What spreadsheets take for the start of a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def test_every_csv_export_shows_formulas_as_text(client, season, organizer, agent_and_token,
                                                 django_capture_on_commit_callbacks):
    mallory = accounts.register_contestant("mallory", "pw-mallory-123", display_name=FORMULA_NAME,
                                           affiliation="\r@SUM(A1:A9)")
    agent, _ = agent_and_token
    submission = judged(django_capture_on_commit_callbacks, agent, mallory,
                        submitting.open_issue(season, mallory, title="ReLU"), valid_files(),
                        pr_url="\t=1+1")
    client.force_login(organizer.user)
    client.post(f"/organizer/submissions/{submission.pk}/review/",
                {"decision": "accepted", "reason": "-2+3", "points_execution_time": "5", "points_throughput": "4",
                 "points_bandwidth": "3", "points_ground_truth": "0", "points_llm_prompt": "0"})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/organizer/submissions/{submission.pk}/rejudge/", {"reason": "+cmd|' /C calc'!A0"})
    exports = {kind: list(csv.reader(io.StringIO(b"".join(client.get(f"/organizer/export/{kind}.csv")
                                                            .streaming_content).decode())))
               for kind in EXPORTS}
    for kind, rows in exports.items():
        for cell in (cell for row in rows for cell in row):
            assert not cell.startswith(FORMULA_STARTS), (kind, cell)
    records = {kind: [dict(zip(rows[0], row)) for row in rows[1:]] for kind, rows in exports.items()}
    (standing,) = records["standings"]
    assert (standing["contestant"], standing["affiliation"]) == (f"'{FORMULA_NAME}", "'\r@SUM(A1:A9)")
    assert (records["submissions"][0]["contestant"], records["submissions"][0]["pr_url"]) == (f"'{FORMULA_NAME}",
                                                                                              "'\t=1+1")
    assert records["reviews"][0]["reason"] == "'-2+3"
    assert "'+cmd|' /C calc'!A0" in [entry["reason"] for entry in records["audit"]]


def test_review_points_must_be_finite_and_at_most_the_items_max(
        client, season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """The walk of issue 12: "nan" or "inf" with an override reason ended in a server error (the database
    refuses them), and 1e308 put a base score of 1e+308 on the leaderboard."""
    agent, _ = agent_and_token
    submission = judged(django_capture_on_commit_callbacks, agent, alice,
                        submitting.open_issue(season, alice, title="ReLU"), valid_files())
    client.force_login(organizer.user)
    form = {"decision": "accepted", "reason": "fine", "override_reason": "organizer's call",
            "points_execution_time": "5", "points_throughput": "4", "points_bandwidth": "3",
            "points_ground_truth": "0", "points_llm_prompt": "0"}
    for given, refusal in [("nan", "CUDA execution time measured: &#x27;nan&#x27; is not a number"),
                           ("inf", "CUDA execution time measured: &#x27;inf&#x27; is not a number"),
                           ("-Infinity", "is not a number"),
                           ("1e308", "CUDA execution time measured: 1e+308 points are more than the item&#x27;s 5"),
                           ("5.5", "5.5 points are more than the item&#x27;s 5")]:
        response = client.post(f"/organizer/submissions/{submission.pk}/review/",
                               dict(form, points_execution_time=given))
        assert response.status_code == 400, given
        assert refusal in response.content.decode(), given
    assert submission.reviews.count() == 0 and not Standing.objects.filter(contestant=alice, base_score__gt=0).exists()
    assert client.post(f"/organizer/submissions/{submission.pk}/review/", form).status_code == 302
    assert Standing.objects.get(contestant=alice).base_score == 12
