"""The agent's reasons (and the site's own) in the reader's language (submissions.agent_reasons): every
form is read from a reason built by the agent's (or the site's) own code, so a change of wording there
fails here; in Chinese each reads with its numbers, names and machine text kept; in English each is
exactly what the agent wrote; a reason of no known form is shown as written. The submission page, the
review page and the audit trail show them translated, and every run flag with its explanation.

The Chinese strings asserted here come from /work/notes/i18n-agent-reasons.json once it is merged
into locale/zh_Hans."""
import ast
import html
import re
import signal
import types
from datetime import timedelta
from pathlib import Path

import pytest
import torch
from django.utils import timezone, translation

from profiler_agent.bundles.forward_backward import ForwardBackward
from profiler_agent.checkers.compare_outputs import Comparison, compare_outputs
from profiler_agent.judge import failure_reasons, judging, ncu_output, ncu_profiling, timing_bounds, timing_confirmation
from profiler_agent.judge.failure_reasons import Limits, explain
from profiler_agent.measure.timed_outputs import WrongTimedOutput
from profiler_agent.protocol import result_schema as agent_schema
from profiler_agent.sandbox.memory_watchdog import MemoryExceeded
from profiler_agent.sandbox.phase_limits import Clock, STAGE_WORDS
from profiler_agent.sandbox.process import SandboxRun
from profiler_agent.trials import call_plan, output_exchange, side_streams
from profiler_agent.trials.correctness_trials import record_comparison
from submissions import agent_protocol, agent_reasons, flag_words
from submissions.models import AuditEntry
from submissions.services import judging as site_judging, recovery, run_states, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, submit

ROOT = Path(__file__).resolve().parents[2]
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
EN = {"Accept-Language": "en-US,en;q=0.9"}
LIMITS = Limits(run_timeout_s=600, compile_timeout_s=300, memory_bytes=2 << 30, compile_memory_bytes=4 << 30)
COMPILE_LOG = ("[1/2] c++ -c /tmp/profiler-agent-x/ext/relu/main.cpp -o main.o\nFAILED: main.o\n"
               "/tmp/profiler-agent-x/ext/relu/main.cpp:3:60: error: expected ';' before '}' token\n")


def in_chinese(text):
    with translation.override("zh-hans"):
        return agent_reasons.translate(text)


def in_english(text):
    with translation.override("en"):
        return agent_reasons.translate(text)


def page_text(response):
    return html.unescape(response.content.decode())


# ---- reasons built by the agent's own code -------------------------------------------------------


def ended(**fields):
    values = {"exit_code": 0, "timed_out": False, "report": None, "stdout": "", "stderr": "", "wall_s": 1.0,
              "phase": "run", "limit_s": 600.0}
    return SandboxRun(**{**values, **fields})


def error(stage, kind="RuntimeError", message="boom", origin="submission"):
    return {"error": {"origin": origin, "stage": stage, "type": kind, "message": message}}


def wrong_answer(reason):
    """The result's reason for a wrong answer whose correctness reason is `reason`."""
    return explain("wrong_answer", ended(), {"correctness": {"passed": False, "reason": reason}}, "", LIMITS)


def recorded(call, outcome):
    """The correctness reason the trials and the verifier record for one call (record_comparison)."""
    correctness = {"trials": 0, "max_abs_err": None, "max_rel_err": None, "atol": None, "rtol": None}
    record_comparison(correctness, call, outcome)
    return correctness["reason"]


def call_failed(call, expected, actual, names=None):
    return recorded(call, compare_outputs(expected, actual, names=names))


def side_stream_failed(call):
    """An output still being written after the call returned, as correctness_trials words it."""
    outcome = compare_outputs(torch.tensor([1.0, 2.0]), torch.zeros(2))
    outcome.reason = f"{side_streams.UNJOINED} ({outcome.reason})"
    return recorded(call, outcome)


def output_names():
    """A forward-and-backward's names of its outputs (forward output, input gradient, parameter gradients)."""
    model = ForwardBackward(torch.nn.Linear(3, 2))
    model(torch.randn(4, 3))
    return model.output_names


def phases():
    """Every way the agent's clock words where a run is (phase_limits.Clock.phase_words)."""
    unphased = Clock(0.0, 10.0, None)
    words = [unphased.phase_words()]
    unphased.on_message("stage correctness")
    words.append(unphased.phase_words())
    phased = Clock(0.0, 10.0, 5.0)
    words.append(phased.phase_words())  # importing the candidate
    for stage in STAGE_WORDS:
        clock = Clock(0.0, 10.0, 5.0)
        clock.on_message(f"stage {stage}")
        words.append(clock.phase_words())
        clock.on_message("compiled")
        words.append(clock.phase_words())
        clock.on_message("build")
        words.append(clock.phase_words())
    compiled = Clock(0.0, 10.0, 5.0)
    compiled.on_message("compiled")
    words.append(compiled.phase_words())  # running the candidate
    return words


def agent_stages():
    """Every stage the agent names submission code or its harness by: the literal names its judged
    process, verifier and checks pass to submission_code, guarded and describe_error."""
    stages = set()
    for path in (ROOT / "profiler_agent").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            position = {"submission_code": 0, "guarded": 0, "describe_error": 1}.get(name)
            if position is None or len(node.args) <= position:
                continue
            argument = node.args[position]
            if isinstance(argument, ast.JoinedStr):
                argument = argument.values[0]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                stages.add(argument.value.partition(" (")[0].strip())
    return stages


def written_in(text, path):
    """Whether a string literal or f-string of `path` writes `text` (any value where it formats one)."""
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.JoinedStr):
            pattern = "".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            pattern = re.escape(node.value)
        else:
            continue
        if re.fullmatch(pattern, text, re.DOTALL):
            return True
    return False


def from_source(path, text):
    assert written_in(text, path), f"{path} no longer writes {text!r}"
    return text


def confirmation_reasons():
    """Why a time is not confirmed: timing_bounds.decide's findings, the profiler's, the checks'."""
    record = timing_bounds.KernelRecord(kernel_ms=3.0, calls=3, capped=False, reference_kernel_ms=6.0)
    reasons = [
        timing_bounds.decide(1.0, 2.0, record, "", 1.0, "")["reason"],  # both bounds fail
        timing_bounds.decide(0.5, 20.0, record, "", None, "", timing_bounds.CPU_TIME)["reason"],
        timing_bounds.decide(None, 2.0, None, "", None, "")["reason"],
        timing_bounds.decide(None, 2.0, record, "", 2.0, "")["reason"],
        timing_confirmation.NO_PROFILER_ON_CPU,
    ]
    try:
        timing_bounds.kernel_record("", 3, 300)
    except ncu_output.NcuOutputError as exc:
        reasons.append(timing_bounds.decide(1.0, 2.0, None, from_source(
            "profiler_agent/judge/timing_confirmation.py", f"ncu's record: {exc}"), None, from_source(
            "profiler_agent/judge/timing_confirmation.py",
            "the reference could not be timed outside: the checking process ended (exit 1, timed out: False) "
            "without a report:\nTraceback ..."))["reason"])
    for run, log in ((ended(timed_out=True), ""), (ended(exit_code=1, stderr="==ERROR== ERR_NVGPUCTRPERM"), ""),
                     (ended(exit_code=1, stderr="==ERROR== Failed to profile"), "")):
        why = ncu_profiling.interpret_run(run, Path("/nonexistent/ncu.csv"), 120.0, "ncu").why
        reasons.append(why.removeprefix(ncu_output.NOTE_PREFIX).strip())  # as confirm_on_device reads it
    for path, text in (
        ("profiler_agent/judge/ncu_profiling.py", "not found on PATH; nothing profiled"),
        ("profiler_agent/judge/timing_confirmation.py", "the profiled calls' outputs could not be verified"),
        ("profiler_agent/judge/timing_confirmation.py", "the demonstrated calls' outputs could not be verified"),
        ("profiler_agent/judge/timing_confirmation.py", "the check failed: RuntimeError: ncu vanished"),
        ("profiler_agent/judge/timing_confirmation.py",
         "the harness's own work (making the values, a checksum of each output: 41.2 ms) is 63% of the 65.4 ms "
         "of CPU time the calls took: too much to bound the call"),
        ("profiler_agent/judge/cpu_demonstration.py", "the demonstration process timed out: Killed"),
        ("profiler_agent/judge/cpu_demonstration.py",
         "the demonstration process ended (exit code 1) before it was done: Traceback ..."),
        ("profiler_agent/judge/cpu_demonstration.py", "no CPU time could be read for the demonstration process"),
        ("profiler_agent/graders/confirmation_check.py",
         "demonstrated call 2: the output saved after the stretch is not the one committed in it"),
    ):
        reasons.append(from_source(path, text))
    assert all(reasons)
    return reasons


def profiled_wrong_answer(where=None, prefix="the profiled calls gave wrong outputs: ", correctness=""):
    """The reason timing_confirmation.apply_outcome gives a run whose profiled calls were wrong."""
    result = agent_schema.empty_result()
    result["status"] = "passed"
    wrong = from_source("profiler_agent/judge/timing_confirmation.py", prefix + correctness)
    outcome = timing_confirmation.Outcome(timing_bounds.not_confirmed(wrong) | {"confirmed": False}, wrong)
    if where:
        outcome.where = from_source("profiler_agent/judge/timing_confirmation.py", where)
    timing_confirmation.apply_outcome(result, outcome)
    return result["reason"]


def site_reasons():
    """The site's own: the sweeper's, its retries, its abuse flags."""
    now = timezone.now()
    late = types.SimpleNamespace(started_at=now - timedelta(days=2), alive_at=now)
    silent = types.SimpleNamespace(started_at=now, alive_at=now - timedelta(days=1))
    lost = [recovery._running_is_lost(late, now), recovery._running_is_lost(silent, now), recovery.OUTDATED_JOB_ID,
            from_source("submissions/services/recovery.py", "its queued job was lost"),
            from_source("submissions/services/recovery.py",
                        "agent gpu-host-1's host took its job 60 s ago or more and never started it")]
    return lost + [
        from_source("submissions/services/run_states.py", f"{lost[1]}, 3 attempts spent"),
        from_source("submissions/services/judging.py", "internal error of the platform; judged again"),
        from_source("submissions/services/abuse.py",
                    "the same operator (torchcode.py) was submitted as #12 for issue QWERTY by Alice Zhang"),
        from_source("submissions/services/abuse.py", "the CUDA code is 93% similar to #7 (ASDFGH) by Bob"),
        from_source("submissions/services/abuse.py",
                    "no better speedup than the accepted #5 of the same operator (h100: 1.20× vs 1.35×)"),
    ]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Reasons as the agent and the site write them, built by their own code."""
    trial, repeat = call_plan.call_plan(3)[1], call_plan.call_plan(3)[-1]
    alone = call_plan.call_plan(1)[-1]  # the only trial's repeat, written into its own tensors
    floats, ints = torch.tensor([1.0, 2.0]), torch.tensor([1, 2])
    names = output_names()
    differences = [
        call_failed(trial, floats, torch.tensor([6.395, 2.0])),
        call_failed(repeat, floats, torch.zeros(3)),
        call_failed(alone, floats, floats.double()),
        call_failed(call_plan.Call(0, repeat=True), ints, torch.tensor([1, 3])),
        call_failed(trial, torch.tensor([1.0, float("nan")]), floats),
        call_failed(trial, (floats,), 3),
        call_failed(trial, (floats, floats), (floats,)),
        call_failed(trial, (1.5,), (2.5,)),
        *[call_failed(trial, (floats,) * len(names), tuple(floats + 1 if i == wrong else floats for i in range(len(names))), names)
          for wrong in range(len(names))],
    ]
    exchange = tmp_path_factory.mktemp("exchange")
    missing = []
    for written_file in (False, True):
        if written_file:
            output_exchange.output_path(exchange, 1, False).write_bytes(b"not a tensor file")
        try:
            output_exchange.load_output(exchange, 1)
        except output_exchange.MissingOutput as exc:  # recorded as the verifier records it
            missing.append(recorded(trial, Comparison(False, reason=str(exc))))
    unjoined = side_stream_failed(call_plan.Call(0))
    timed = str(WrongTimedOutput(9, compare_outputs(floats, torch.zeros(2, 2)).reason))

    stopped = {"passed": False, "reason": missing[0]}
    failure_reasons.name_first_failure(stopped, {"passed": False, "reason": differences[0]})
    verified = {"passed": False, "reason": differences[0]}
    failure_reasons.name_unjoined_stream(verified, {"passed": False, "reason": unjoined})
    kept = {"passed": True, "reason": None}
    failure_reasons.timed_call_failure_stands(kept, {"passed": False, "reason": timed})

    build_error = error("load_candidate", message="Error building extension 'relu'")["error"]
    cached = judging.failure_from_cache({"key": "0123456789abcdef0123", "failed_at": "2026-01-01T00:00:00Z",
                                         "compile_log": COMPILE_LOG, "error": build_error})
    verifier_failed = from_source("profiler_agent/judge/judging.py",
                                  "the verifier ended (exit -9, timed out: False) without a verdict:\nTraceback ...")
    watchdog = [explain("memory_limit", ended(exit_code=-9, memory_exceeded=MemoryExceeded(4 << 30, 13 << 30, words)),
                        None, "", LIMITS) for words in phases()]
    stages = [explain("runtime_error", ended(exit_code=1), error(stage), "", LIMITS) for stage in agent_stages()]
    reasons = [
        *[wrong_answer(r) for r in (*differences, *missing, unjoined, timed, stopped["reason"], verified["reason"],
                                    kept["reason"])],
        wrong_answer(None),
        explain("compile_error", ended(timed_out=True, exit_code=None, phase="compile", limit_s=300.0), None, "",
                LIMITS),
        explain("compile_error", ended(exit_code=1, phase="compile"), error("load_candidate"), COMPILE_LOG, LIMITS),
        explain("compile_error", ended(exit_code=1, phase="compile"), {"error": build_error}, "", LIMITS),
        cached.reason,
        explain("timeout", ended(timed_out=True, limit_s=600.0), None, "", LIMITS),
        explain("memory_limit", ended(exit_code=-signal.SIGKILL, oom_kills=2), None, "", LIMITS),
        explain("memory_limit", ended(exit_code=-signal.SIGKILL, oom_kills=1, phase="compile"), None, "", LIMITS),
        explain("memory_limit", ended(exit_code=1),
                error("candidate (trial 1)", "torch.OutOfMemoryError", "CUDA out of memory."), "", LIMITS),
        explain("memory_limit", ended(exit_code=-signal.SIGKILL), None, "", LIMITS),
        *watchdog,
        explain("runtime_error", ended(exit_code=-signal.SIGSEGV), None, "", LIMITS),
        explain("runtime_error", ended(exit_code=-99, phase="compile"), None, "", LIMITS),
        explain("runtime_error", ended(exit_code=3), None, "", LIMITS),
        explain("runtime_error", ended(exit_code=1), error("candidate (warm-up)", "SystemExit", "3"), "", LIMITS),
        explain("runtime_error", ended(exit_code=1), error("reference (timed call 4)", "SystemExit", ""), "", LIMITS),
        explain("runtime_error", ended(exit_code=1), {"error": {}, "correctness": {}}, "", LIMITS),
        *stages,
        explain("internal_error", ended(), error("harness", "KeyError", "'seed'", origin="harness"), "", LIMITS),
        explain("internal_error", ended(), error("verify", "VerifierFailed", verifier_failed, origin="harness"), "",
                LIMITS),
        explain("internal_error", ended(), error("verify", "VerifierFailed", "", origin="harness"), "", LIMITS),
        explain("internal_error", ended(), {"error": {}, "correctness": {}}, "", LIMITS),
        judging.ended_before_its_job(ended(exit_code=-signal.SIGTERM)).reason,
        profiled_wrong_answer(correctness=differences[0]),
        profiled_wrong_answer("in the calls the agent timed from outside", "the demonstrated calls gave wrong outputs: ",
                              from_source("profiler_agent/graders/confirmation_check.py",
                                          "demonstrated call 1: output 0: 2 elements differ")),
        *confirmation_reasons(),
        *site_reasons(),
    ]
    assert all(isinstance(r, str) and r for r in reasons)
    return reasons


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


# ---- on the pages ---------------------------------------------------------------------------------

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
