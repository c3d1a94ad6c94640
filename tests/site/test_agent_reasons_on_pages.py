"""The agent's reasons and the run flags on the pages that show them, in the reader's language: the
submission page, the review page and the audit trail (submissions.agent_reasons; every form is
checked in tests/site/test_agent_reasons.py)."""
import html

import pytest

from submissions.models import AuditEntry
from submissions.services import judging as site_judging, run_states, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, submit

ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
EN = {"Accept-Language": "en-US,en;q=0.9"}


def page_text(response):
    return html.unescape(response.content.decode())


WRONG = ("trial 1: output 0: max abs error 5.395e+00, max rel error 6.969e+05 (atol 0.0001, rtol 0.0001)")
WRONG_ZH = "试验 1：输出 0：最大绝对误差 5.395e+00，最大相对误差 6.969e+05（atol 0.0001，rtol 0.0001）"


@pytest.fixture
def judged(season, alice, agent_and_token, django_capture_on_commit_callbacks):
    """Alice's submission: a wrong answer on the CPU, a pass on the C500 flagged by the agent."""
    agent, _ = agent_and_token
    submission = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                        valid_files())
    cpu, c500 = submission.runs.order_by("gpu_type__slug")[1], submission.runs.order_by("gpu_type__slug")[0]
    results = {cpu.pk: {**passed_result(), "status": "wrong_answer", "reason": WRONG},
               c500.pk: {**passed_result(), "flags": ["no_custom_kernel", "input_memoized", "timing_unconfirmed"]}}
    results[c500.pk]["timing"]["confirmation"] = {
        "method": "ncu", "kernel_ms": 3.0, "reported_ms": 1.0, "ratio": 1 / 3, "tolerance": 0.1, "calls_profiled": 3,
        "kernels_capped": False, "reference_reported_ms": 2.0, "reference_outside_ms": 2.0,
        "reference_tolerance": 0.1, "confirmed": False,
        "reason": "the candidate's reported median (1 ms) is below the GPU's own record of its kernels (3 ms per "
                  "call) by more than 10%"}
    for run in (cpu, c500):
        _, secret = site_judging.start_run(run.pk, agent, run.attempts)
        site_judging.record_result(run.pk, agent, secret, results[run.pk])
    return submission


def test_the_submission_page_shows_the_reason_and_the_flags_in_the_readers_language(client, alice, judged):
    client.force_login(alice.user)
    url = f"/submissions/{judged.pk}/"
    zh, en = page_text(client.get(url, headers=ZH)), page_text(client.get(url, headers=EN))
    assert WRONG_ZH in zh and WRONG not in zh
    assert WRONG in en and WRONG_ZH not in en
    c500 = judged.runs.get(gpu_type__slug="c500")
    assert '<span class="tag" data-flag="no_custom_kernel" title="优化实现的核函数没有一个来自它自己的编译' in zh
    assert f'id="flag-notes-{c500.pk}"' in zh
    assert "<strong>记忆了输入</strong>: 重复输入比新输入快得多：采用新输入上的成绩。" in zh
    assert "<strong>没有自定义核函数</strong>: " in zh
    assert ">时间未经确认</span>" in zh  # the flag's label; the note of its own explains it
    assert "<strong>input memoized</strong>: Much faster on a repeated input than on fresh ones" in en
    assert ">no_custom_kernel<" not in en and ">no custom kernel</span>" in en


def test_a_reason_is_escaped_where_shown(client, alice, judged):
    run = judged.runs.get(gpu_type__slug="cpu")
    run.result["reason"] = "candidate (trial 1): ValueError: <script>alert(1)</script>"
    run.save(update_fields=["result"])
    client.force_login(alice.user)
    page = client.get(f"/submissions/{judged.pk}/", headers=ZH).content.decode()
    assert "优化实现（试验 1）：ValueError: &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


def test_the_review_page_shows_the_times_reason_and_the_flags_in_the_readers_language(client, organizer, judged):
    client.force_login(organizer.user)
    url = f"/organizer/submissions/{judged.pk}/"
    review = page_text(client.get(url, headers=ZH))
    assert "优化实现报告的中位时间（1 ms）比 GPU 自己对其核函数的记录（每次调用 3 ms）低了超过 10%" in review
    assert 'data-flag="input_memoized" title="重复输入比新输入快得多：采用新输入上的成绩。">记忆了输入</span>' in review
    english = page_text(client.get(url, headers=EN))
    assert "is below the GPU's own record of its kernels (3 ms per call) by more than 10%" in english


def test_the_audit_trail_shows_the_sweepers_reason_in_the_readers_language(
        client, organizer, season, bob, settings, django_capture_on_commit_callbacks):
    settings.RUN_MAX_ATTEMPTS = 1
    submission = submit(django_capture_on_commit_callbacks, bob, submitting.open_issue(season, bob, title="ReLU"),
                        valid_files())
    run = submission.runs.get(gpu_type__slug="cpu")
    run_states.requeue(run, "its judgement ran past the deadline")  # its attempts spent: the sweeper gives up
    assert AuditEntry.objects.filter(object_id=str(run.pk), action="run.verdict",
                                     reason="its judgement ran past the deadline, 1 attempts spent").exists()
    client.force_login(organizer.user)
    for url in (f"/submissions/{submission.pk}/", f"/organizer/submissions/{submission.pk}/"):
        assert "其评测超过了截止时间，已用掉 1 次尝试" in page_text(client.get(url, headers=ZH))
        assert "its judgement ran past the deadline, 1 attempts spent" in page_text(client.get(url, headers=EN))
