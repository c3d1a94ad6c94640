"""Separate wall-clock limits for the build (importing the candidate) and for the run, end to end.

Each candidate here is pure Python; a slow import stands in for a slow load_inline build, which also
happens while the candidate is imported, so these tests cost no compile.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from profiler_agent.judge import options as judge_options_module
from profiler_agent.worker import agent_config
from profiler_agent.worker.judge_job import judge_options
from tests.agent.conftest import RELU_REFERENCE

FAST = ("--timing-budget", "0.2")

SLOW_IMPORT = '''
    import time, torch

    time.sleep({seconds})  # a slow "build"

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''


def test_a_build_past_the_compile_limit_is_a_compile_error_with_a_note(make_bundle, judge):
    started = time.monotonic()
    result = judge(make_bundle(SLOW_IMPORT.format(seconds=600)), "--compile-timeout", "3", *FAST).result
    assert result["status"] == "compile_error"
    assert "[profiler_agent] compile timed out after 3 s" in result["logs"]["compile"]
    assert "compile timed out after 3 s" in result["logs"]["stderr"]
    assert 3 <= result["durations_s"]["compile"] < 10  # the parent's clock, as no report came
    assert time.monotonic() - started < 60


SMALL_REFERENCE = (Path(RELU_REFERENCE).read_text()
                   .replace("batch_size = 4096", "batch_size = 16").replace("dim = 1024", "dim = 16"))


def test_the_build_does_not_count_against_the_run_limit(make_bundle, judge):
    # 12 s importing, then a run of a few seconds (small inputs): one 10 s limit over both would kill it
    bundle = make_bundle(SLOW_IMPORT.format(seconds=12), **{"torchcode.py": SMALL_REFERENCE})
    result = judge(bundle, "--compile-timeout", "60", "--run-timeout", "10", *FAST).result
    assert result["status"] == "passed", result["logs"]["stderr"][-2000:]
    assert result["durations_s"]["compile"] >= 12


@pytest.mark.parametrize("option, value", [
    ("--compile-timeout", "0"), ("--run-timeout", "-5"), ("--timeout", "soon"),
    ("--memory-limit", "lots"), ("--compile-memory-limit", "0"),
])
def test_bad_limits_are_refused_with_a_usage_error(option, value, capsys):
    from profiler_agent.__main__ import main

    with pytest.raises(SystemExit) as exited:
        main(["judge", "some-bundle", option, value])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "argument" in error and option in error and repr(value) in error


def test_job_options_set_both_limits_and_timeout_s_stays_the_run_limit():
    config = agent_config.AgentConfig(site="http://site.invalid", token="t", name="a", device="cpu",
                                      timeout_s=100, compile_timeout_s=200, memory_limit_bytes=1 << 30)
    assert (judge_options(config, {}).timeout_s, judge_options(config, {}).compile_timeout_s) == (100, 200)
    judged = judge_options(config, {"timeout_s": 900, "compile_timeout_s": 300})
    assert (judged.timeout_s, judged.compile_timeout_s) == (900, 300)
    assert judge_options(config, {"timeout_s": 900, "run_timeout_s": 50}).timeout_s == 50  # the newer name wins
    # the build's memory: max(memory limit, 4 GiB) unless given
    assert judged.compile_memory_limit() == 4 << 30
    with pytest.raises(ValueError, match="compile_timeout_s must be positive"):
        judge_options(config, {"compile_timeout_s": 0})


def test_limits_come_from_the_environment_and_bad_values_are_named(monkeypatch):
    monkeypatch.setenv(agent_config.SITE_ENV, "http://site.invalid")
    monkeypatch.setenv(agent_config.TOKEN_ENV, "t")
    monkeypatch.setenv(agent_config.DEVICE_ENV, "cpu")
    monkeypatch.setenv(agent_config.TIMEOUT_ENV, "30")  # the older name of the run timeout
    monkeypatch.setenv(agent_config.COMPILE_TIMEOUT_ENV, "90")
    monkeypatch.setenv(agent_config.COMPILE_MEMORY_LIMIT_ENV, "6G")
    config = agent_config.from_env()
    assert (config.timeout_s, config.compile_timeout_s, config.compile_memory_limit_bytes) == (30, 90, 6 << 30)
    monkeypatch.setenv(agent_config.RUN_TIMEOUT_ENV, "45")
    assert agent_config.from_env().timeout_s == 45
    monkeypatch.setenv(agent_config.COMPILE_TIMEOUT_ENV, "ten")
    with pytest.raises(RuntimeError, match="PROFILER_AGENT_COMPILE_TIMEOUT must be a positive number"):
        agent_config.from_env()


def test_the_operators_timing_budget_comes_from_the_environment_and_a_bad_one_stops_the_agent(monkeypatch, tmp_path):
    monkeypatch.setenv(judge_options_module.TIMING_BUDGET_ENV, "0.25")
    assert judge_options_module.timing_budget_from_env() == 0.25
    monkeypatch.setenv(judge_options_module.TIMING_BUDGET_ENV, "")
    assert judge_options_module.timing_budget_from_env() is None
    for bad in ("fast", "0", "-1", "nan"):
        monkeypatch.setenv(judge_options_module.TIMING_BUDGET_ENV, bad)
        with pytest.raises(RuntimeError, match="PROFILER_AGENT_TIMING_BUDGET must be a positive number"):
            judge_options_module.timing_budget_from_env()
    # the agent refuses it at start, before any judging
    monkeypatch.setenv(judge_options_module.TIMING_BUDGET_ENV, "fast")
    done = subprocess.run([sys.executable, "-m", "profiler_agent", "judge", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "PROFILER_AGENT_TIMING_BUDGET must be a positive number" in done.stderr
