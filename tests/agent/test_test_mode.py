"""A test submission's judging (`judge --mode test`, the site's `correctness_only` option): the correctness
trials and the verifier's verdict, then nothing more: no timing, no confirmation, no self-test. Real
compiles and child processes, on CPU."""

from pathlib import Path

from profiler_agent.bundles.bundle import open_bundle
from profiler_agent.judge.judging import CORRECTNESS_ONLY_NOTE, judge_bundle
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.protocol.result_schema import validate_result
from profiler_agent.worker.agent_config import AgentConfig
from profiler_agent.worker.judge_job import judge_options
from tests.agent.conftest import EXAMPLES


def _untimed(result):
    timing = result["timing"]
    for side in ("reference", "candidate"):
        assert set(timing[side].values()) == {None}, timing[side]
    assert timing["speedup"] is None and timing["samples"] is None and timing["confirmation"] is None
    assert result["durations_s"]["timing"] is None and result["durations_s"]["confirm"] is None
    assert result["metrics"]["bandwidth_gbs"] is None and result["metrics"]["tflops"] is None


def test_judge_mode_test_checks_correctness_and_neither_times_confirms_nor_self_tests(judge):
    outcome = judge(EXAMPLES / "relu-cpu", "--mode", "test")
    assert outcome.exit_code == 0
    result = outcome.result
    validate_result(result)
    assert result["status"] == "passed" and result["reason"] is None
    assert result["correctness"]["passed"] is True and result["correctness"]["trials"] == 3
    assert result["correctness"]["max_abs_err"] == 0.0 and result["correctness"]["atol"] == 1e-4
    assert result["inputs"] == [{"dtype": "float32", "shape": [4096, 1024]}]  # the verifier ran
    _untimed(result)
    assert result["self_test"] is None  # the example has run_code.py: a full judging runs it
    assert result["kernels"] is None  # no kernel census, which follows the timing
    assert result["logs"]["stderr"].endswith(CORRECTNESS_ONLY_NOTE)
    assert "passed" in outcome.stdout


def test_judge_mode_test_of_a_wrong_candidate_is_a_wrong_answer_with_its_errors(judge):
    outcome = judge(EXAMPLES / "relu-cpu-wrong", "--mode", "test", "--seed", "7")
    result = outcome.result
    validate_result(result)
    assert result["status"] == "wrong_answer" and result["reason"].startswith("trial 0: output 0: max abs error")
    assert result["correctness"]["passed"] is False and result["correctness"]["max_abs_err"] > 0
    _untimed(result)
    assert CORRECTNESS_ONLY_NOTE in result["logs"]["stderr"]


def test_a_test_judging_reports_no_stage_past_checking(build_cache, tmp_path):
    stages = []
    options = JudgeOptions(device="cpu", cache_dir=build_cache, correctness_only=True, progress=stages.append)
    result = judge_bundle(open_bundle(EXAMPLES / "relu-cpu", Path(tmp_path)), options)
    assert result["status"] == "passed"
    assert "checking" in stages
    assert not {"timing", "profiling", "self_test"} & set(stages)


def test_the_sites_options_say_which_runs_are_judged_for_correctness_only():
    config = AgentConfig(site="http://site", token="t", name="w", device="cpu")
    assert judge_options(config, {"run_timeout_s": 60, "mode": "test", "correctness_only": True}).correctness_only
    assert judge_options(config, {"mode": "test"}).correctness_only
    assert not judge_options(config, {"mode": "benchmark", "correctness_only": False}).correctness_only
    assert not judge_options(config, {"run_timeout_s": 60}).correctness_only  # a ranked run: the full judging
    assert not judge_options(config, {"correctness_only": "yes"}).correctness_only  # only a JSON true
