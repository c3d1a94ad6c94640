"""The one-line reason of each status, for the endings a CPU run cannot produce on demand (the
harness's own failure, an OOM kill by a cgroup, a compile timeout): from the parent's real records.
The endings a CPU run can produce are judged for real in test_judge_cli.py, test_hostile.py and
test_trials.py."""

import signal

from profiler_agent.judge.judging import unjudged_result
from profiler_agent.judge.failure_reasons import (
    MAX_REASON_CHARS, Limits, explain, name_first_failure, name_unjoined_stream, one_line, verifier_note,
)
from profiler_agent.sandbox.process import SandboxRun
from profiler_agent.protocol.result_schema import validate_result

LIMITS = Limits(run_timeout_s=600, compile_timeout_s=300, memory_bytes=2 << 30, compile_memory_bytes=4 << 30)


def ended(**fields) -> SandboxRun:
    values = {"exit_code": 0, "timed_out": False, "report": None, "stdout": "", "stderr": "", "wall_s": 1.0,
              "phase": "run", "limit_s": 600.0}
    return SandboxRun(**{**values, **fields})


def report_with(error: dict | None = None, reason: str | None = None) -> dict:
    return {"error": error, "correctness": {"passed": False if reason else None, "reason": reason}}


def test_passed_has_no_reason():
    assert explain("passed", ended(), report_with(), "", LIMITS) is None


def test_the_harness_failing_is_an_internal_error_naming_its_stage():
    error = {"origin": "harness", "stage": "harness", "type": "KeyError", "message": "'seed'"}
    assert explain("internal_error", ended(), report_with(error), "", LIMITS) == \
        "the harness failed in harness: KeyError: 'seed'"
    verifier = {"origin": "harness", "stage": "verify", "type": "VerifierFailed",
                "message": "the verifier ended (exit -9, timed out: False) without a verdict:\nTraceback ...\nboom"}
    assert explain("internal_error", ended(), report_with(verifier), "", LIMITS) == \
        "the harness failed: the verifier ended (exit -9, timed out: False) without a verdict:"


def test_an_oom_kill_names_the_limit_of_the_phase_it_happened_in():
    run = ended(exit_code=-signal.SIGKILL, oom_kills=2)
    assert explain("memory_limit", run, None, "", LIMITS) == (
        "out of memory: the run memory limit (2 GiB) was reached; the OOM killer ended 2 process(es)")
    building = ended(exit_code=-signal.SIGKILL, oom_kills=1, phase="compile")
    assert "the compile memory limit (4 GiB)" in explain("memory_limit", building, None, "", LIMITS)
    unknown = explain("memory_limit", ended(exit_code=-signal.SIGKILL), None, "", LIMITS)
    assert unknown == "the judged process was killed by SIGKILL without a report (taken for the OOM killer)"


def test_a_compile_timeout_and_a_failed_build_say_which():
    timed_out = ended(timed_out=True, exit_code=None, phase="compile", limit_s=300.0)
    assert explain("compile_error", timed_out, None, "", LIMITS) == "compile timed out after 300 s (the compile limit)"
    log = ("[1/2] c++ -c /tmp/profiler-agent-x/ext/relu/main.cpp -o main.o\n"
           "FAILED: main.o\n"
           "/tmp/profiler-agent-x/ext/relu/main.cpp:3:60: error: expected ';' before '}' token\n"
           "/tmp/profiler-agent-x/ext/relu/main.cpp:9:1: error: second one\n")
    error = {"origin": "submission", "stage": "load_candidate", "type": "RuntimeError",
             "message": "Error building extension 'relu'"}
    assert explain("compile_error", ended(), report_with(error), log, LIMITS) == \
        "building the extension failed: main.cpp:3:60: error: expected ';' before '}' token"
    assert explain("compile_error", ended(), report_with(error), "no diagnostics", LIMITS) == \
        "building the extension failed: RuntimeError: Error building extension 'relu'"


def test_a_wrong_answer_gives_the_verifiers_first_failure():
    assert explain("wrong_answer", ended(), report_with(reason="trial 1: output 0: 3 elements differ"), "", LIMITS) \
        == "trial 1: output 0: 3 elements differ"


def test_a_missing_output_names_where_the_judged_process_had_stopped():
    verdict = {"passed": False, "reason": "trial 1: no output (the judged process ended or stopped before writing it)"}
    name_first_failure(verdict, {"reason": "trial 0: output 0: max abs error 1.5e+00"})
    assert verdict["reason"].endswith("; the judged process had stopped at trial 0: output 0: max abs error 1.5e+00")
    untouched = {"passed": False, "reason": "trial 1: output 0: 3 elements differ"}
    name_first_failure(untouched, {"reason": "trial 0: something"})
    assert untouched["reason"] == "trial 1: output 0: 3 elements differ"
    note = verifier_note({"notes": ["only 1 of 3 trials fit"], "correctness": verdict})
    assert note.startswith("[profiler_agent] verifier: only 1 of 3 trials fit\n[profiler_agent] verifier: wrong answer: trial 1")


def test_an_output_still_being_written_is_named_beside_the_verifiers_wrong_answer():
    """The judged process saw the output change after the call returned (side_streams.still_written,
    judged for real on a GPU in test_timing_gpu.py); its word only explains a wrong answer the
    verifier found, never makes one."""
    import torch

    from profiler_agent.trials import side_streams

    copied = torch.tensor([1.0, float("nan")])
    assert side_streams.still_written(copied, torch.tensor([1.0, 2.0]))
    assert not side_streams.still_written(copied, copied.clone())  # NaN where it was NaN: settled
    seen = {"passed": False, "reason": f"trial 1: {side_streams.UNJOINED} (output 0: NaN/inf)"}
    verdict = {"passed": False, "reason": "trial 1: output 0: NaN/inf"}
    name_unjoined_stream(verdict, seen)
    assert verdict["reason"].startswith(f"trial 1: {side_streams.UNJOINED}")
    assert verdict["reason"].endswith("; the verifier: trial 1: output 0: NaN/inf")
    passed = {"passed": True, "reason": None}
    name_unjoined_stream(passed, seen)
    assert passed == {"passed": True, "reason": None}
    side_streams.hold_other_streams(torch.device("cpu"))  # nothing to hold off CUDA


def test_a_reason_is_one_line_and_capped():
    text = one_line("first line\n  second\tline " + "x" * 1000)
    assert "\n" not in text and text.startswith("first line second line x") and len(text) == MAX_REASON_CHARS


def test_a_result_that_never_reached_the_harness_has_a_reason_too():
    result = unjudged_result("cpu", "runtime_error", "[profiler_agent] bundle refused: no torchcode.py\nmore\n")
    validate_result(result)
    assert result["reason"] == "bundle refused: no torchcode.py"
    assert unjudged_result("cpu", "internal_error", "")["reason"] == "internal error"
    trace = "Traceback (most recent call last):\n  File \"x.py\", line 1\nConnectionError: site unreachable\n"
    assert unjudged_result("cpu", "internal_error", trace)["reason"] == "ConnectionError: site unreachable"
