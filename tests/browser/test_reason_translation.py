"""A submission's runs in Chromium, in both languages: the agent's reasons for a wrong answer and a
compile error read in the reader's language with their numbers and the compiler's line kept, and a
run's flags are named and explained."""
import pytest

from submissions.bundles import build_bundle
from submissions.models import GpuType, Run, RunStatus, Season, Verdict
from submissions.services import accounts, submitting
from tests.browser.test_every_page import log_in_browser
from tests.browser.test_public_pages import shoot
from tests.judged_data import passed_result
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)

WRONG = "trial 1: output 0: max abs error 5.395e+00, max rel error 6.969e+05 (atol 0.0001, rtol 0.0001)"
COMPILE = "building the extension failed: main.cpp:3:60: error: expected ';' before '}' token"
SHOWN = {
    "en-US": {"wrong": WRONG, "compile": COMPILE, "flag": "input memoized",
              "note": "input memoized: Much faster on a repeated input than on fresh ones"},
    "zh-CN": {"wrong": "试验 1：输出 0：最大绝对误差 5.395e+00，最大相对误差 6.969e+05（atol 0.0001，rtol 0.0001）",
              "compile": "编译扩展失败：main.cpp:3:60: error: expected ';' before '}' token", "flag": "记忆了输入",
              "note": "记忆了输入: 重复输入比新输入快得多：采用新输入上的成绩。"},
}


@pytest.fixture
def judged_three_ways(queue_prefix):
    """Alice's submission: a wrong answer on the H100, a compile error on the C500, a pass on the CPU
    flagged `input_memoized`, each with the result an agent posts."""
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    gpus = {slug: GpuType.objects.create(slug=slug, name=name)
            for slug, name in (("h100", "NVIDIA H100"), ("c500", "MetaX C500"), ("cpu", "CPU"))}
    season.gpu_types.add(*gpus.values())
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    passed = passed_result(2.0, 0.5)
    untimed = {"reference": {"median_ms": None}, "candidate": {"median_ms": None}, "speedup": None}
    for slug, verdict, result in (
        ("h100", Verdict.WRONG_ANSWER, {**passed, "status": "wrong_answer", "reason": WRONG, "timing": untimed}),
        ("c500", Verdict.COMPILE_ERROR, {**passed, "status": "compile_error", "reason": COMPILE, "timing": untimed}),
        ("cpu", Verdict.PASSED, {**passed, "flags": ["input_memoized"]}),
    ):
        Run.objects.filter(submission=submission, gpu_type=gpus[slug]).update(
            status=RunStatus.DONE, verdict=verdict, result=result, flags=result["flags"],
            speedup=2.0 if verdict == Verdict.PASSED else None)
    return alice, submission


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_the_agents_reasons_and_the_flags_read_in_the_readers_language(live_server, page, judged_three_ways, language):
    alice, submission = judged_three_ways
    shown = SHOWN[language]
    log_in_browser(page, live_server, alice.user)
    page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    runs = {slug: Run.objects.get(submission=submission, gpu_type__slug=slug).pk for slug in ("h100", "c500", "cpu")}
    assert shown["wrong"] in page.locator(f"#run-{runs['h100']} .reason").inner_text()
    assert shown["compile"] in page.locator(f"#run-{runs['c500']} .reason").inner_text()
    tag = page.locator(f"#run-{runs['cpu']} .tag[data-flag=input_memoized]")
    assert tag.inner_text() == shown["flag"]
    assert shown["note"] in page.locator(f"#flag-notes-{runs['cpu']}").inner_text()
    if language == "zh-CN":
        assert WRONG not in page.content() and "input_memoized</span>" not in page.content()
    shoot(page, f"reason-translation-{language[:2]}")
    assert page.console_errors == []
