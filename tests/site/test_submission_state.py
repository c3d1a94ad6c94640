"""Where a contestant sees a submission, it says whether it waits for an organizer's review: the walk
found a submission whose runs passed shown as "Passed" alone, as if that were the end. Judging, then
"Passed — awaiting review" (or "Did not pass — awaiting review"), then the review's decision; on the
submission page and its polled runs table, the account page, the issue page and the contestant page,
in both languages, and in the API's `state`. Who may not see the submission's reviews sees none of it
until it is accepted."""
import html
import re

import pytest

from submissions.bundles import build_bundle
from submissions.models import RejudgeScope, Run, RunStatus, Verdict
from submissions.services import cancelling, rejudging, reviewing, submitting
from submissions.services.accounts import create_api_token
from tests.judged_data import mark_passed
from tests.site.bundle_files import valid_files

ENGLISH = {"Accept-Language": "en"}
CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


@pytest.fixture
def submission(season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    return submitting.create_submission(alice, issue, build_bundle(valid_files()))


def pass_every_run(submission):
    for slug in submission.runs.values_list("gpu_type__slug", flat=True):
        mark_passed(submission, slug, 2.0, 1.0)


def text(response):
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def states_seen(client, submission, headers=ENGLISH):
    """The state each page shows for the submission (None where it shows none)."""
    def state_in(page, container):
        found = re.search(container + r'.*?<span class="submission-state [a-z_]+">([^<]*)</span>', page, re.S)
        return found.group(1) if found else None

    issue = submission.issue
    return {
        "submission": state_in(text(client.get(f"/submissions/{submission.pk}/", headers=headers)),
                               r'<p id="submission-state">'),
        "runs table": state_in(text(client.get(f"/submissions/{submission.pk}/runs/", headers=headers)),
                               r'<p id="submission-state">'),
        "issue": state_in(text(client.get(f"/issues/{issue.code}/", headers=headers)), r'<table id="history">'),
        "contestant": state_in(text(client.get(f"/contestants/{submission.contestant.pk}/", headers=headers)),
                               r'<table id="submissions">'),
    }


def account_state(client):
    return re.search(r'<ul id="submissions">.*?<span class="submission-state [a-z_]+">([^<]*)</span>',
                     text(client.get("/account/", headers=ENGLISH)), re.S).group(1)


def everywhere(state):
    return {"submission": state, "runs table": state, "issue": state, "contestant": state}


@pytest.mark.parametrize("decision, shown", [("accepted", "Accepted"), ("rejected", "Rejected")])
def test_a_passed_submission_says_it_awaits_review_until_an_organizer_decides(client, submission, organizer,
                                                                              decision, shown):
    client.force_login(submission.contestant.user)
    assert states_seen(client, submission) == everywhere("Judging")
    pass_every_run(submission)
    assert states_seen(client, submission) == everywhere("Passed — awaiting review")
    assert account_state(client) == "Passed — awaiting review"
    assert states_seen(client, submission, CHINESE) == everywhere("已通过，等待审核")
    reviewing.review_submission(submission, organizer.user, decision, reason="checked",
                                rubric={"execution_time": 5} if decision == "accepted" else None,
                                override_reason="test points" if decision == "accepted" else "")
    assert states_seen(client, submission) == everywhere(shown)
    assert account_state(client) == shown
    rejudging.rejudge(RejudgeScope.SUBMISSION, submission, organizer.user, "new harness")
    assert states_seen(client, submission) == everywhere(shown)  # a rejudge under way keeps the decision


def test_a_submission_that_did_not_pass_awaits_review_without_saying_passed(client, submission):
    client.force_login(submission.contestant.user)
    pass_every_run(submission)
    Run.objects.filter(submission=submission).update(verdict=Verdict.WRONG_ANSWER)
    assert states_seen(client, submission) == everywhere("Did not pass — awaiting review")
    assert states_seen(client, submission, CHINESE) == everywhere("未通过，等待审核")


def test_others_see_the_state_once_accepted_only(client, submission, bob, organizer):
    pass_every_run(submission)
    nobody = everywhere(None)
    assert states_seen(client, submission) == nobody  # a visitor
    client.force_login(bob.user)
    assert states_seen(client, submission) == nobody
    reviewing.review_submission(submission, organizer.user, "rejected", reason="copied")
    assert states_seen(client, submission) == nobody
    client.force_login(organizer.user)
    assert states_seen(client, submission) == everywhere("Rejected")
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test points")
    client.force_login(bob.user)
    assert states_seen(client, submission) == everywhere("Accepted")  # its code is public now too


def test_the_api_tells_the_state(client, submission, organizer):
    bearer = {"Authorization": f"Bearer {create_api_token(submission.contestant)[1]}"}

    def state():
        return client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer).json()["state"]

    assert state() == "judging"
    Run.objects.filter(submission=submission).update(status=RunStatus.DONE, verdict=Verdict.RUNTIME_ERROR)
    assert state() == "awaiting_review"
    pass_every_run(submission)
    assert state() == "passed_awaiting_review"
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test points")
    assert state() == "accepted"
    schema = client.get("/api/v1/openapi.json").json()["components"]["schemas"]["SubmissionOut"]
    assert schema["properties"]["state"]["enum"] == ["judging", "passed_awaiting_review", "awaiting_review",
                                                     "accepted", "rejected", "passed", "failed", "cancelled"]


def in_review_queue(client, organizer, submission):
    client.force_login(organizer.user)
    return f'href="/organizer/submissions/{submission.pk}/"' in text(client.get("/organizer/", headers=ENGLISH))


def test_a_submission_whose_every_run_was_cancelled_leaves_the_review_queue_and_says_cancelled(
        client, submission, season, alice, organizer):
    """Nothing was judged: there is nothing to review, and "Did not pass" would blame the code."""
    half = submitting.create_submission(alice, submitting.open_issue(season, alice, title="GELU"),
                                        build_bundle(dict(valid_files(), **{"readme.md": b"another"})))
    for run in submission.runs.all():
        cancelling.cancel_own_run(run.pk, alice.user, "wrong files")
    cpu, c500 = half.runs.order_by("gpu_type__slug")
    assert (c500.gpu_type.slug, cpu.gpu_type.slug) == ("cpu", "c500")  # by slug: c500 first
    cancelling.cancel_own_run(c500.pk, alice.user)  # one type cancelled, the other judged: still reviewed
    Run.objects.filter(pk=cpu.pk).update(status=RunStatus.DONE, verdict=Verdict.WRONG_ANSWER)

    assert not in_review_queue(client, organizer, submission) and in_review_queue(client, organizer, half)
    client.force_login(alice.user)
    for headers, cancelled in ((ENGLISH, "Cancelled"), (CHINESE, "已取消")):
        seen = states_seen(client, submission, headers)
        seen.pop("contestant")  # its first row is the newer submission's
        assert seen == {"submission": cancelled, "runs table": cancelled, "issue": cancelled}
        page = text(client.get(f"/contestants/{alice.pk}/", headers=headers))
        row = re.search(rf'href="/submissions/{submission.pk}/".*?</tr>', page, re.S).group(0)
        assert f">{cancelled}</span>" in row
    assert states_seen(client, half)["submission"] == "Did not pass — awaiting review"
    bearer = {"Authorization": f"Bearer {create_api_token(alice)[1]}"}
    assert client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer).json()["state"] == "cancelled"
