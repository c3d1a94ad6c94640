"""Accepting what failed: a submission without a passed run on every GPU type of its season, or with
abuse flags, is accepted only with an explicit override and its reason (audited); the review page says why."""
import copy
import html
import re

import pytest

from submissions import selectors
from submissions.models import AuditEntry, Review
from submissions.services import reviewing, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit
from tests.site.test_abuse_flags import RENAMED_TORCHCODE

EN = {"Accept-Language": "en-US,en;q=0.9"}
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}


def text(response):
    return html.unescape(response.content.decode())


def runtime_error():
    return dict(copy.deepcopy(passed_result()), status="runtime_error", reason="candidate (trial 0): RuntimeError")


@pytest.fixture
def failed_on_cpu(season, alice, agent_and_token, django_capture_on_commit_callbacks):
    """Passed on the C500, a runtime error on the CPU."""
    agent, _ = agent_and_token
    submission = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                        valid_files())
    report_all(submission, agent, passed_result())
    cpu = submission.runs.get(gpu_type__slug="cpu")
    cpu.verdict, cpu.speedup, cpu.result = "runtime_error", None, runtime_error()
    cpu.save()
    return submission


def test_accepting_a_failed_run_needs_an_override_with_a_reason(client, failed_on_cpu, organizer):
    submission = failed_on_cpu
    with pytest.raises(reviewing.ReviewRefused) as refused:
        reviewing.review_submission(submission, organizer.user, "accepted", reason="looks fine")
    assert "CPU: Runtime error, no passed run" in str(refused.value)
    assert not Review.objects.exists() and not selectors.can_see_code(client.get("/").wsgi_request.user, submission)

    review = reviewing.review_submission(submission, organizer.user, "accepted", reason="looks fine",
                                         acceptance_override="the CPU agent lacked a library; C500 is what counts")
    assert review.acceptance_override.startswith("the CPU agent lacked")
    entry = AuditEntry.objects.get(action="review.acceptance_overridden")
    assert entry.before == {"runs": {"cpu": "runtime_error"}} and entry.actor_label == "organizer"
    assert entry.reason == review.acceptance_override

    # rejecting needs no override
    reviewing.review_submission(submission, organizer.user, "rejected", reason="on second thought")
    assert AuditEntry.objects.filter(action="review.acceptance_overridden").count() == 1


def test_unjudged_and_flagged_submissions_need_it_too(season, alice, bob, organizer, agent_and_token,
                                                     django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    capture = django_capture_on_commit_callbacks
    original = submit(capture, alice, submitting.open_issue(season, alice, title="ReLU"), valid_files())
    report_all(original, agent, passed_result())
    queued = submit(capture, alice, submitting.open_issue(season, alice, title="Queued"),
                    dict(valid_files(), **{"readme.md": b"again"}))
    with pytest.raises(reviewing.ReviewRefused, match="CPU: still queued"):
        reviewing.review_submission(queued, organizer.user, "accepted")
    flagged = submit(capture, bob, submitting.open_issue(season, bob, title="ReLU too"),
                     dict(valid_files(), **{"torchcode.py": RENAMED_TORCHCODE}))
    report_all(flagged, agent, passed_result())
    assert flagged.abuse_flags.exists()
    with pytest.raises(reviewing.ReviewRefused, match="2 open abuse flags: Near-copy of another contestant's CUDA "
                                                     "code; 1 open abuse flag: Same operator submitted again"):
        reviewing.review_submission(flagged, organizer.user, "accepted")
    reviewing.review_submission(flagged, organizer.user, "accepted", acceptance_override="a different shape: checked")
    entry = AuditEntry.objects.get(action="review.acceptance_overridden")
    assert entry.before == {"flags": {"near_copy": 2, "same_operator": 1}}  # each kind once, with its count
    # a submission that passed everywhere without flags is accepted as before, with no override recorded
    review = reviewing.review_submission(original, organizer.user, "accepted", acceptance_override="not needed")
    assert review.acceptance_override == ""


@pytest.mark.parametrize("headers, why, error, accepted_with_override", [
    (EN, "CPU: Runtime error, no passed run", "Accepting this submission needs an override",
     ("with an override: “C500 is what counts”.</p>", "A new acceptance would need one again:")),
    (ZH, "CPU：运行错误，没有通过的运行", "接受此提交需要越权确认", ("越权接受：“C500 is what counts”。</p>", "再次接受仍需越权确认：")),
])
def test_the_review_page_says_why_and_takes_the_reason(client, failed_on_cpu, organizer, headers, why, error,
                                                       accepted_with_override):
    submission = failed_on_cpu
    client.force_login(organizer.user)
    url = f"/organizer/submissions/{submission.pk}/"
    page = text(client.get(url, headers=headers))
    assert 'id="accept-blockers"' in page and why in page and 'name="acceptance_override"' in page

    form = {"decision": "accepted", "reason": "fine", "points_execution_time": "5", "points_throughput": "4",
            "points_bandwidth": "3", "points_ground_truth": "0", "points_llm_prompt": "0"}
    refused = client.post(f"{url}review/", form, headers=headers)
    assert refused.status_code == 400 and error in text(refused) and not Review.objects.exists()
    # the refused form keeps what was chosen, the decision too
    assert re.search(r'value="accepted" required checked>', text(refused)) and 'value="rejected" checked' not in text(refused)
    accepted = client.post(f"{url}review/", dict(form, acceptance_override="C500 is what counts"), headers=headers)
    assert accepted.status_code == 302
    assert Review.objects.get().acceptance_override == "C500 is what counts"
    page = text(client.get(url, headers=headers))
    assert "C500 is what counts" in page and "review.acceptance_overridden" in page
    # once accepted, the page says so and that the blockers would hold a new acceptance again
    assert 'id="accepted-with-override"' in page and all(part in page for part in accepted_with_override)
    assert why in page and "needs an override:" not in page
    assert not re.search(r'value="(accepted|rejected)"[^>]*checked', page)
