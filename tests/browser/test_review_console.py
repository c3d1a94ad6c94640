"""In Chromium, in both languages: the review queue shows verdicts, ranked speedups and each flag kind once
with a count, and filters flagged submissions; accepting a failed submission asks for an override and its
reason; the audit trail reads as fields; an issue page offers "Submit to this issue" and names run states
in words."""
import copy

import pytest

from submissions.bundles import build_bundle
from submissions.models import GpuType, Review, Season
from submissions.services import accounts, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all
from tests.site.test_abuse_flags import RENAMED_TORCHCODE

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = {
    "en-US": {"runtime_error": "cpu: Runtime error", "passed": "c500: Passed", "queued": "cpu: Queued",
              "near_copy": "Near-copy of another contestant's CUDA code ×2", "flagged_only": "flagged only",
              "blocker": "CPU: Runtime error, no passed run", "needs": "Accepting this submission needs an override",
              "accept": "Accept", "record": "Record the decision", "submit_here": "Submit to this issue",
              "anyway": "accepted anyway: the CPU agent lacks a library"},
    "zh-CN": {"runtime_error": "cpu: 运行错误", "passed": "c500: 通过", "queued": "cpu: 排队中",
              "near_copy": "与其他选手的 CUDA 代码高度相似 ×2", "flagged_only": "仅看有标记的",
              "blocker": "CPU：运行错误，没有通过的运行", "needs": "接受此提交需要越权确认",
              "accept": "接受", "record": "记录决定", "submit_here": "向此赛题提交",
              "anyway": "越权接受： the CPU agent lacks a library"},
}


def log_in(page, site, username, password):
    page.goto(f"{site}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


@pytest.fixture
def contest(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    c500 = GpuType.objects.create(slug="c500", name="MetaX C500")
    season.gpu_types.add(cpu, c500)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-123", display_name="Bob")
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    agent, _ = accounts.create_agent("agent", [cpu, c500])

    failed = submitting.create_submission(alice, submitting.open_issue(season, alice, title="ReLU"),
                                          build_bundle(valid_files()))
    report_all(failed, agent, passed_result(speedup=3.0))
    cpu_run = failed.runs.get(gpu_type=cpu)
    cpu_run.verdict, cpu_run.speedup = "runtime_error", None
    cpu_run.result = dict(copy.deepcopy(passed_result()), status="runtime_error", reason="RuntimeError")
    cpu_run.save()
    earlier = submitting.create_submission(alice, submitting.open_issue(season, alice, title="ReLU, first try"),
                                           build_bundle(dict(valid_files(), **{"readme.md": b"first"})))
    report_all(earlier, agent, passed_result(speedup=1.5))
    # Bob's copy of Alice's operator, near both of her submissions: flagged, two flags of a kind
    bob_issue = submitting.open_issue(season, bob, title="ReLU too")
    flagged = submitting.create_submission(bob, bob_issue, build_bundle(dict(valid_files(),
                                                                              **{"torchcode.py": RENAMED_TORCHCODE})))
    report_all(flagged, agent, passed_result(speedup=2.5))
    waiting = submitting.create_submission(bob, bob_issue, build_bundle(dict(valid_files(), **{"readme.md": b"v2"})))
    return {"failed": failed, "flagged": flagged, "waiting": waiting, "bob_issue": bob_issue}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_the_review_queue_and_an_accept_override(live_server, page, contest, language):
    words = WORDS[language]
    failed, flagged = contest["failed"], contest["flagged"]
    log_in(page, live_server.url, "organizer", "pw-organizer-1")

    page.goto(f"{live_server.url}/organizer/")
    row = page.locator(f"#queue-{failed.pk}")
    assert words["runtime_error"] in row.locator("td.verdicts").inner_text()
    assert words["passed"] in row.locator("td.verdicts").inner_text()
    assert "c500 3.00×" in row.locator("td.speedups").inner_text()
    flags = page.locator(f"#queue-{flagged.pk} td.flags .tag")
    assert flags.count() == len({f.kind for f in flagged.abuse_flags.all()})  # each kind once
    assert words["near_copy"] in page.locator(f"#queue-{flagged.pk} td.flags").inner_text()
    page.get_by_label(words["flagged_only"]).check()
    page.locator("form.search button").click()
    page.wait_for_load_state()
    assert "flagged=1" in page.url
    assert page.locator(f"#queue-{flagged.pk}").count() == 1 and page.locator(f"#queue-{failed.pk}").count() == 0

    page.goto(f"{live_server.url}/organizer/submissions/{failed.pk}/")
    assert words["blocker"] in page.locator("#accept-blockers").inner_text()
    page.get_by_label(words["accept"], exact=True).check()
    page.get_by_role("button", name=words["record"]).click()
    page.wait_for_load_state()
    assert words["needs"] in page.locator("#review-error").inner_text()
    assert not Review.objects.exists()
    page.get_by_label(words["accept"], exact=True).check()
    page.fill("textarea[name=acceptance_override]", "the CPU agent lacks a library")
    page.get_by_role("button", name=words["record"]).click()
    page.wait_for_load_state()
    assert Review.objects.get().acceptance_override == "the CPU agent lacks a library"
    assert words["anyway"] in page.locator("#reviews").inner_text()

    # the audit trail: fields on their own lines, never a Python dict
    audit = page.locator("#audit")
    assert "{'" not in audit.inner_text() and "{\"" not in audit.inner_text()
    verdict_row = audit.locator("tr", has_text="run.verdict").first
    assert verdict_row.locator("dl.fields dt", has_text="verdict").count() == 2  # before and after
    override_row = audit.locator("tr", has_text="review.acceptance_overridden")
    assert override_row.locator("dt", has_text="runs.cpu").count() == 1
    assert override_row.locator("dd", has_text="runtime_error").count() == 1
    # the refused decision's page is answered 400 on purpose: Chromium logs that, nothing else may be there
    assert [e for e in page.console_errors if "status of 400" not in e] == []


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_issue_page_offers_submitting_to_it_and_names_run_states(live_server, page, contest, language):
    words = WORDS[language]
    issue = contest["bob_issue"]
    page.goto(f"{live_server.url}/issues/{issue.code}/")
    history = page.locator("#history").inner_text()
    assert words["queued"] in history and "queued" not in history.replace(words["queued"], "")
    log_in(page, live_server.url, "bob", "pw-bob-123")
    page.goto(f"{live_server.url}/issues/{issue.code}/")
    page.get_by_role("link", name=words["submit_here"]).click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/submit/?issue={issue.code}")
    assert page.locator("select[name=issue]").input_value() == str(issue.pk)
    # another contestant is told whose issue it is instead
    page.context.clear_cookies()
    log_in(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/issues/{issue.code}/")
    assert page.get_by_role("link", name=words["submit_here"]).count() == 0
    assert page.locator("#submit-to-issue-note").count() == 1
    assert page.console_errors == []


ABOVE_MAX = {"en-US": "CUDA execution time measured: 1e+308 points are more than the item's 5",
             "zh-CN": "CUDA 执行时间评估：1e+308 分超过了该项的上限 5 分"}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_points_above_an_items_max_are_refused_in_the_browser_and_by_the_site(live_server, page, contest, language):
    """The walk of issue 12 accepted 1e308 points (with an override reason): 1e+308 on the leaderboard."""
    words, flagged = WORDS[language], contest["flagged"]
    log_in(page, live_server.url, "organizer", "pw-organizer-1")
    review_page = f"{live_server.url}/organizer/submissions/{flagged.pk}/"
    page.goto(review_page)
    points = page.locator("input[name=points_execution_time]")
    points.fill("1e308")
    page.get_by_label(words["accept"], exact=True).check()
    page.fill("textarea[name=reason]", "fine")
    page.fill("textarea[name=override_reason]", "organizer's call")
    page.fill("textarea[name=acceptance_override]", "a copy on purpose")
    page.get_by_role("button", name=words["record"]).click()
    assert points.evaluate("e => e.validity.rangeOverflow")  # Chromium keeps the form: the field's max
    assert page.url == review_page and not Review.objects.exists()

    page.locator("form.rubric").evaluate("f => f.noValidate = true")  # a client that skips the check
    page.get_by_role("button", name=words["record"]).click()
    page.wait_for_load_state()
    assert ABOVE_MAX[language] in page.locator("#review-error").inner_text()
    assert not Review.objects.exists()
    assert [e for e in page.console_errors if "status of 400" not in e] == []
