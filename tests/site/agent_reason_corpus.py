"""Reasons as the agent and the site write them, each built by their own code (the agent's failure
reasons, its trials' comparisons, its confirmation's, the site's recovery): the corpus that
tests/site/test_agent_reasons.py reads, so a change of wording in that code fails there."""
import ast
import re
import signal
import types
from datetime import timedelta
from pathlib import Path

import torch
from django.utils import timezone

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
from submissions.services import recovery

ROOT = Path(__file__).resolve().parents[2]
LIMITS = Limits(run_timeout_s=600, compile_timeout_s=300, memory_bytes=2 << 30, compile_memory_bytes=4 << 30)
COMPILE_LOG = ("[1/2] c++ -c /tmp/profiler-agent-x/ext/relu/main.cpp -o main.o\nFAILED: main.o\n"
               "/tmp/profiler-agent-x/ext/relu/main.cpp:3:60: error: expected ';' before '}' token\n")


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


def written_reasons(tmp_path_factory):
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
