"""The agent's reasons (and the site's own) in the reader's language (submissions.agent_reasons): every
form is read from a reason built by the agent's (or the site's) own code, so a change of wording there
fails here; in Chinese each reads with its numbers, names and machine text kept; in English each is
exactly what the agent wrote; a reason of no known form is shown as written. The submission page, the
review page and the audit trail show them translated (test_agent_reasons_on_pages.py), and every run
flag has a label and an explanation."""
import pytest
from django.utils import translation

from profiler_agent.trials import call_plan, side_streams
from submissions import agent_protocol, agent_reasons, flag_words
from tests.site.agent_reason_corpus import agent_stages, side_stream_failed, wrong_answer, written_reasons


def in_chinese(text):
    with translation.override("zh-hans"):
        return agent_reasons.translate(text)


def in_english(text):
    with translation.override("en"):
        return agent_reasons.translate(text)


# ---- reasons built by the agent's own code -------------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return written_reasons(tmp_path_factory)


def forms_read(text):
    """The forms a reason reads as, nested ones included (empty when it reads as none)."""
    found, pending = set(), [agent_reasons.parse(text)]
    while pending:
        parsed = pending.pop()
        if isinstance(parsed, agent_reasons.Cut):
            pending.append(parsed.head)
        elif isinstance(parsed, list):
            found.add(agent_reasons.LISTED)
            pending.extend(parsed)
        elif isinstance(parsed, tuple):
            found.add(parsed[0])
            pending.extend(parsed[1].values())
    return found


# ---- reading them ---------------------------------------------------------------------------------


def test_every_reason_the_agent_and_the_site_write_reads_as_a_known_form(written):
    unknown = [reason for reason in written if agent_reasons.parse(reason) is None]
    assert unknown == []


def test_every_form_is_one_the_agent_or_the_site_writes(written):
    """A form no real reason reads as is dead (or its wording drifted from the agent's): each is used."""
    every = {message for forms in agent_reasons.FORMS.values() for message in forms} | {agent_reasons.LISTED}
    used = set().union(*(forms_read(reason) for reason in written))
    assert sorted(every - used) == []


def test_every_stage_the_agent_names_is_a_known_step():
    assert agent_stages() and sorted(stage for stage in agent_stages()
                                     if agent_reasons._parse(stage, "step") is None) == []


def test_in_english_every_reason_is_exactly_what_was_written(written):
    assert [in_english(reason) for reason in written] == written


FORM_IDS = ["tolerance", "shape", "gradient", "build-cache", "compile-limit", "run-limit", "stage", "memory", "crash",
            "time-not-confirmed", "sweeper", "near-copy"]


@pytest.mark.parametrize("english, chinese", [
    ("trial 1: output 0: max abs error 5.395e+00, max rel error 6.969e+05 (atol 0.0001, rtol 0.0001)",
     "试验 1：输出 0：最大绝对误差 5.395e+00，最大相对误差 6.969e+05（atol 0.0001，rtol 0.0001）"),
    ("timed call 9: output 0: shape (2, 2), expected (2,)", "计时调用 9：输出 0：形状为 (2, 2)，应为 (2,)"),
    ("repeat of trial 0 (its inputs again, written into trial 1's input tensors): output 2 (the gradient of "
     "parameter weight): 3 elements differ",
     "重复试验 0（再次使用其输入，写入试验 1 的输入张量）：输出 2（参数 weight 的梯度）：3 个元素不同"),
    ("building the extension failed: main.cpp:3:60: error: expected ';' before '}' token (from the build cache)",
     "编译扩展失败：main.cpp:3:60: error: expected ';' before '}' token（来自编译缓存）"),
    ("compile timed out after 300 s (the compile limit)", "编译超时：300 秒后仍未完成（编译时限）"),
    ("timed out after 600 s (the run limit); the process and its children were killed",
     "运行超时：600 秒后仍未完成（运行时限）；进程及其子进程已被终止"),
    ("candidate (trial 1): RuntimeError: CUDA error: an illegal memory access was encountered",
     "优化实现（试验 1）：RuntimeError: CUDA error: an illegal memory access was encountered"),
    ("memory limit 4 GiB exceeded while importing the candidate (build phase): 12.1 GiB resident",
     "导入优化实现时（编译阶段）超出内存上限 4 GiB：常驻内存 12.1 GiB"),
    ("the judged process ended (killed by SIGSEGV) after importing the candidate, before it reported: submission "
     "code ended the process (os._exit, a signal, a crash)",
     "被评测进程在导入优化实现之后、报告之前结束（被 SIGSEGV 终止）：提交的代码结束了该进程（os._exit、信号或崩溃）"),
    ("the candidate's reported median (1 ms) is below the GPU's own record of its kernels (3 ms per call) by more "
     "than 10%; the reference was not timed outside",
     "优化实现报告的中位时间（1 ms）比 GPU 自己对其核函数的记录（每次调用 3 ms）低了超过 10%；参考实现未在外部计时"),
    ("its agent did not name it in a heartbeat for 120 s, 3 attempts spent",
     "其代理已有 120 秒未在心跳中提到它，已用掉 3 次尝试"),
    ("the CUDA code is 93% similar to #7 (ASDFGH) by Bob", "CUDA 代码与 Bob 的 #7（ASDFGH）相似度为 93%"),
], ids=FORM_IDS)
def test_each_form_reads_in_chinese_with_its_values_kept(english, chinese):
    assert agent_reasons.parse(english) is not None
    assert in_chinese(english) == chinese
    assert in_english(english) == english


def test_composite_reasons_are_translated_part_by_part():
    differs = "trial 0: output 0: max abs error 1.000e+00, max rel error 1.000e+00 (atol 0.0001, rtol 0.0001)"
    assert in_chinese("timed call 9: output 0: 2 elements differ (found in the judged process; not saved for the "
                      "verifier)") == "计时调用 9：输出 0：2 个元素不同（在被评测进程中发现；未保存给校验器）"
    assert in_chinese(f"under the profiler: the profiled calls gave wrong outputs: {differs}") == (
        "在性能分析器下：被分析的调用给出了错误的输出：试验 0：输出 0：最大绝对误差 1.000e+00，最大相对误差 1.000e+00"
        "（atol 0.0001，rtol 0.0001）")
    assert in_chinese("trial 2: no output (the judged process ended or stopped before writing it); the judged "
                      "process had stopped at trial 0: output 0: 1 elements differ") == (
        "试验 2：没有输出（被评测进程在写出它之前已结束或停止）；被评测进程此前已停在：试验 0：输出 0：1 个元素不同")
    # a time's reasons joined by "; ", machine text in them kept
    assert in_chinese("ncu's record: launch ID 'x' is not a number; no candidate median was reported") == (
        "ncu 的记录：launch ID 'x' is not a number；未报告优化实现的中位时间")


def test_a_reason_the_agent_cut_short_is_translated_as_far_as_it_reads():
    """An output left on a side stream: the agent's words for it fill its 300 characters, so the reason is
    always cut (failure_reasons.one_line); what it names is translated, the cut rest kept."""
    reason = wrong_answer(side_stream_failed(call_plan.Call(0)))
    assert reason.endswith("…")
    rest = reason[len(f"trial 0: {side_streams.UNJOINED}"):]
    assert rest.startswith(" (output 0: max abs er")
    assert in_chinese(reason) == (
        "试验 0：调用返回后其输出仍在被写入：工作位于调用方的流从不等待的流上（返回前用 "
        "torch.cuda.current_stream().wait_stream(side) 让调用方的流等待它）；调用方的流上下一个读取该输出的操作可能读到"
        "未写完的数据" + rest)
    assert in_english(reason) == reason
    assert in_chinese("the outputs differ from the refer…") == "the outputs differ from the refer…"


def test_machine_text_and_unknown_reasons_are_kept_as_written():
    # an exception's message (submission code's words) is kept, even with "; " or a known form's words in it
    assert in_chinese("load_candidate: ValueError: no output; exit code 1") == (
        "导入优化实现：ValueError: no output; exit code 1")
    assert in_chinese("SystemExit: 3 (the code called sys.exit)") == "SystemExit: 3 (the code called sys.exit)"
    for unknown in ("a reason no agent writes: 42", "trial 1: a comparison of a newer agent",
                    "memory limit 4 GiB exceeded while dreaming (build phase): 5 GiB resident", "", None):
        assert in_chinese(unknown) == unknown
        assert in_english(unknown) == unknown
    assert in_chinese("candidate (trial 1): SystemExit: 3 (the code called sys.exit)") == (
        "优化实现（试验 1）：SystemExit: 3（代码调用了 sys.exit）")


def test_every_flag_has_a_label_and_an_explanation():
    site_flags = ("timing_cleared", "timing_noisy", "awaiting_second_judging", "second_judging_confirmed",
                  "second_judging_disagrees", "second_judging_cleared")
    for flag in (*agent_protocol.FLAGS, *site_flags):
        with translation.override("zh-hans"):
            assert flag_words.label(flag) != flag and flag_words.explanation(flag), flag
    assert flag_words.label("a_newer_flag") == "a_newer_flag" and flag_words.explanation("a_newer_flag") == ""
    with translation.override("zh-hans"):
        assert flag_words.label("input_memoized") == "记忆了输入"
        assert flag_words.explanation("input_memoized") == "重复输入比新输入快得多：采用新输入上的成绩。"
