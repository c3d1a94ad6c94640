"""The timing confirmation (profiler_agent.judge.timing_confirmation): the whole chain (a stand-in `ncu`
running the real profiled process in the sandbox, the trusted check verifying its outputs and timing the reference)
on CPU, where no GPU and no Nsight Compute exist. The GPU check is bench/judge/timing_confirmation.py."""

import statistics
from pathlib import Path

import pytest

from profiler_agent.protocol import result_schema
from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.judge.judging import snapshot_sources
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.judge import timing_confirmation
from profiler_agent.graders import profiled_target
from tests.agent.processes import wait_gone
from tests.agent.test_timing_bounds import (ATEN_KERNEL, OWN_STYLE_KERNEL, RECORDED_3_CALLS_MS,
                                          REFERENCE_STACK, _call, _reference_call, _table)
from tests.agent.test_trials import STATEFUL_PORT, STATEFUL_REFERENCE

# --- the chain, with a stand-in ncu (tests/agent/stand_in_ncu.py) ---------------------------------------------

def _judged(candidate_ms: float, reference_ms: float, flags=()) -> dict:
    result = result_schema.empty_result()
    result.update(status="passed", flags=list(flags))
    result["device"]["kind"] = "cuda"
    result["timing"]["candidate"]["median_ms"] = candidate_ms
    result["timing"]["reference"]["median_ms"] = reference_ms
    result["timing"]["speedup"] = reference_ms / candidate_ms
    result["correctness"]["passed"] = True
    return result


def _confirm(bundle: Path, result: dict, tmp_path, cache, device="cpu", timeout_s=120.0) -> timing_confirmation.Outcome:
    # device "cpu": the profiled process runs without NVTX ranges, the check times with the CPU clock
    options = JudgeOptions(device=device, ncu_timeout_s=timeout_s, timeout_s=120.0)
    located = locate_bundle(bundle)
    return timing_confirmation.confirm_on_device(result, located, options, Path(cache), tmp_path / "confirm",
                                     snapshot_sources(located))


ATEN_RELU = '''
    import torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''
# Does less under a profiler: the parent of the profiled process is ncu (the stand-in's script is
# named so too). Outside ncu it is an honest ReLU, so it passes the judgement.
# Crashes under a profiler (seen on an H100: CUBLAS_STATUS_NOT_INITIALIZED inside a CUDA-graph capture).
CRASH_UNDER_NCU = '''
    import os, torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
                if b"ncu" in f.read():
                    raise RuntimeError("CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle)")
            return torch.relu(x)
'''
LAZY_UNDER_NCU = '''
    import os, torch

    def _under_ncu():
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            return b"ncu" in f.read()

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.zeros_like(x) if _under_ncu() else torch.relu(x)
'''


def test_an_honest_candidate_is_confirmed(make_bundle, stand_in_ncu, tmp_path, shared_build_cache):
    stand_in_ncu()
    outcome = _confirm(make_bundle(ATEN_RELU), _judged(1.0, 1e-6), tmp_path, shared_build_cache)
    confirmation = outcome.confirmation
    assert outcome.wrong_answer == ""
    assert confirmation["confirmed"] is True, confirmation["reason"]
    assert confirmation["method"] == "ncu" and confirmation["calls_profiled"] == 3
    assert confirmation["kernel_ms"] == pytest.approx(RECORDED_3_CALLS_MS, rel=1e-12)
    assert confirmation["ratio"] == pytest.approx(1.0 / RECORDED_3_CALLS_MS)
    assert confirmation["reference_outside_ms"] > 0  # timed by the trusted process itself
    exchange = tmp_path / "confirm" / "profile" / "exchange"
    assert sorted(p.name for p in exchange.iterdir()) == ["trial-0.pt", "trial-1.pt", "trial-2.pt"]


def test_calls_reported_short_are_recorded_over_more_calls(make_bundle, stand_in_ncu, tmp_path, shared_build_cache):
    """A call of a few microseconds varies by a few percent under ncu, its first profiled one most: its
    record is the median of SHORT_CALL_CALLS calls of each model, which the profiled process makes
    and the verifier checks, and a call reported longer keeps CONFIRM_CALLS (the test above)."""
    calls = timing_confirmation.SHORT_CALL_CALLS
    candidate_ns = [5570] + [5090 + 20 * (i % 4) for i in range(calls - 1)]
    reference_ns = [9860] + [9520 + 30 * (i % 3) for i in range(calls - 1)]
    stand_in_ncu(table=_table([(_call(i), OWN_STYLE_KERNEL, ns) for i, ns in enumerate(candidate_ns)]
                              + [(_reference_call(i), ATEN_KERNEL, ns) for i, ns in enumerate(reference_ns)]))
    reported = timing_confirmation.SHORT_CALL_MS / 2
    confirmation = _confirm(make_bundle(ATEN_RELU), _judged(reported, 1e-6), tmp_path, shared_build_cache).confirmation
    assert confirmation["calls_profiled"] == calls, confirmation["reason"]
    assert confirmation["kernel_ms"] == pytest.approx(statistics.median(candidate_ns) * 1e-6)
    assert confirmation["kernel_speedup"] == pytest.approx(statistics.median(reference_ns) / statistics.median(candidate_ns))
    exchange = tmp_path / "confirm" / "profile" / "exchange"
    assert sorted(p.name for p in exchange.iterdir()) == sorted(f"trial-{i}.pt" for i in range(calls))
    assert timing_confirmation.confirm_calls(timing_confirmation.SHORT_CALL_MS) == timing_confirmation.CONFIRM_CALLS


def test_the_profiled_process_makes_the_calls_its_job_asks_never_more_than_it_was_started_for():
    assert profiled_target.job_calls({}, 9) == 9
    assert profiled_target.job_calls({"calls": 3}, 9) == 3
    assert profiled_target.job_calls({"calls": 50}, 9) == 9  # ncu's launch cap was set for 9
    for bad in (0, -1, True, "3", 2.5):
        with pytest.raises(ValueError, match="positive whole number"):
            profiled_target.job_calls({"calls": bad}, 9)


def test_a_stateful_port_is_verified_in_the_profiled_calls_order(make_bundle, stand_in_ncu, tmp_path,
                                                                shared_build_cache):
    """The profiled process calls the candidate once to warm up, then once per trial: the verifier
    gives the reference the same calls, so its hidden state follows the candidate's."""
    stand_in_ncu()
    bundle = make_bundle(STATEFUL_PORT, **{"torchcode.py": STATEFUL_REFERENCE})
    outcome = _confirm(bundle, _judged(1.0, 1e-6), tmp_path, shared_build_cache)
    assert outcome.wrong_answer == "" and outcome.confirmation["method"] == "ncu"


def test_a_reported_time_below_the_record_is_not_confirmed(make_bundle, stand_in_ncu, tmp_path, shared_build_cache):
    # a third of its record is a call of 2 us: recorded over SHORT_CALL_CALLS calls
    stand_in_ncu(table=_table([(_call(i), OWN_STYLE_KERNEL, 5824) for i in range(timing_confirmation.SHORT_CALL_CALLS)]))
    forged = 5824e-6 / 3
    confirmation = _confirm(make_bundle(ATEN_RELU), _judged(forged, 1e-6), tmp_path, shared_build_cache).confirmation
    assert confirmation["confirmed"] is False and "below the GPU's own record" in confirmation["reason"], confirmation["reason"]


def test_an_inflated_reference_time_is_not_confirmed(make_bundle, stand_in_ncu, tmp_path, shared_build_cache):
    stand_in_ncu()
    confirmation = _confirm(make_bundle(ATEN_RELU), _judged(1.0, 1e6), tmp_path, shared_build_cache).confirmation
    assert confirmation["confirmed"] is False and "reference's reported median" in confirmation["reason"]
    assert confirmation["reference_outside_ms"] < 1e6


def test_a_candidate_that_does_less_under_the_profiler_fails(make_bundle, stand_in_ncu, tmp_path, shared_build_cache):
    stand_in_ncu()
    result = _judged(1.0, 1e-6)
    outcome = _confirm(make_bundle(LAZY_UNDER_NCU), result, tmp_path, shared_build_cache)
    assert outcome.confirmation["confirmed"] is False
    assert outcome.wrong_answer.startswith("the profiled calls gave wrong outputs: trial 0")
    timing_confirmation.apply_outcome(result, outcome)
    result_schema.validate_result(result)
    assert result["status"] == "wrong_answer" and result["correctness"]["passed"] is False
    assert result["reason"].startswith("under the profiler: the profiled calls gave wrong outputs: trial 0")
    assert "timing_unconfirmed" in result["flags"]
    assert result["timing"]["candidate"]["median_ms"] is None and result["timing"]["speedup"] is None
    assert "wrong answer under the profiler" in result["logs"]["stderr"]


def test_a_crashed_profiled_process_keeps_what_the_judged_process_found(make_bundle, stand_in_ncu, tmp_path,
                                                                      shared_build_cache):
    """No record, no census from outside: the judged process's `no_custom_kernel` and kernels stay, the
    time is unconfirmed, and the reason ends with the candidate's own error, whole."""
    stand_in_ncu()
    result = _judged(1.0, 1e-6, flags=["no_custom_kernel"])  # a reference time no host beats
    judged_census = {"seen": "cuda_kernels", "candidate": [ATEN_KERNEL], "reference": [ATEN_KERNEL], "custom": []}
    result["kernels"] = dict(judged_census)
    outcome = _confirm(make_bundle(CRASH_UNDER_NCU), result, tmp_path, shared_build_cache)
    assert outcome.census is None and outcome.confirmation["confirmed"] is None, outcome.confirmation["reason"]
    timing_confirmation.apply_outcome(result, outcome)
    result_schema.validate_result(result)
    assert result["status"] == "passed"
    assert {"no_custom_kernel", "timing_unconfirmed"} <= set(result["flags"])
    assert result["kernels"] == judged_census
    reason = result["timing"]["confirmation"]["reason"]
    assert reason.endswith("RuntimeError: CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle)"), reason


def test_a_profiler_timeout_flags_the_run_and_leaves_nothing_running(make_bundle, stand_in_ncu, tmp_path,
                                                                   shared_build_cache):
    pid_file = stand_in_ncu("hang")
    result = _judged(1.0, 1.0)
    options = JudgeOptions(device="cuda", ncu_timeout_s=3.0, timeout_s=60.0)
    bundle = locate_bundle(make_bundle(ATEN_RELU))
    timing_confirmation.add_to_result(result, bundle, options, Path(shared_build_cache), tmp_path / "confirm",
                          snapshot_sources(bundle))
    result_schema.validate_result(result)
    confirmation = result["timing"]["confirmation"]
    assert result["status"] == "passed" and "timing_unconfirmed" in result["flags"]
    assert confirmation["confirmed"] is None and confirmation["reason"].startswith("timed out after 3 s")
    assert "[profiler_agent] timing confirmation: not confirmed: timed out after 3 s" in result["logs"]["stderr"]
    assert wait_gone([int(pid_file.read_text())]) == []


def test_no_profiler_on_a_cuda_host_flags_the_run(make_bundle, tmp_path, monkeypatch, shared_build_cache):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ncu anywhere
    result = _judged(1.0, 1.0)
    bundle = locate_bundle(make_bundle(ATEN_RELU))
    timing_confirmation.add_to_result(result, bundle, JudgeOptions(device="cuda", timeout_s=60.0), Path(shared_build_cache),
                          tmp_path / "confirm", snapshot_sources(bundle))
    assert "timing_unconfirmed" in result["flags"]
    assert result["timing"]["confirmation"]["reason"].startswith("not found on PATH")


def test_a_run_that_did_not_pass_has_no_confirmation(tmp_path):
    result = _judged(1.0, 1.0)
    result["status"] = "wrong_answer"
    timing_confirmation.add_to_result(result, None, JudgeOptions(device="cuda"), tmp_path, tmp_path / "confirm", {})
    assert result["timing"]["confirmation"] is None and result["flags"] == []
    assert not (tmp_path / "confirm").exists()


# --- the forger of the finding, judged on CPU -----------------------------------------------------------

# Wraps the harness's timing function at import: the candidate's times (and their wall-clock twins,
# so the timer check sees nothing odd) come back divided by three.
TIMING_FORGER = '''
    import torch
    import profiler_agent.measure.timing as _timing

    _original = _timing.time_interleaved

    def _forged(*args, **kwargs):
        timings = _original(*args, **kwargs)
        for times in (timings.times_ms, timings.walls_ms):
            if "candidate" in times:
                times["candidate"] = [t / 3 for t in times["candidate"]]
        return timings

    _timing.time_interleaved = _forged

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''


def test_a_timing_forger_with_short_calls_on_cpu_is_marked_unconfirmed_but_not_flagged(make_bundle, judge):
    outcome = judge(make_bundle(TIMING_FORGER), "--timing-budget", "0.3")
    result = outcome.result
    assert result["status"] == "passed", result["logs"]["stderr"]
    confirmation = result["timing"]["confirmation"]
    assert confirmation["reported_ms"] == result["timing"]["candidate"]["median_ms"]
    if confirmation["confirmed"] is False:
        # a busy host made even its forged calls long enough to time from outside: caught
        assert confirmation["method"] == "cpu time" and "timing_unconfirmed" in result["flags"]
        return
    assert confirmation["confirmed"] is None
    assert _not_bounded_on_cpu(confirmation["reason"]), confirmation["reason"]
    # CPU seasons still rank: no device profiler is not a finding against the run
    assert "timing_unconfirmed" not in result["flags"]


def test_an_honest_cpu_judgement_is_never_flagged_and_says_why_its_time_is_not_bounded(make_bundle, judge):
    result = judge(make_bundle(ATEN_RELU), "--timing-budget", "0.3").result
    assert result["status"] == "passed"
    assert "timing_unconfirmed" not in result["flags"]
    confirmation = result["timing"]["confirmation"]
    if confirmation["confirmed"] is True:
        # a busy host made its calls long enough (1 ms and more) to time from outside
        assert confirmation["method"] == "cpu time"
    else:
        assert confirmation["confirmed"] is None and _not_bounded_on_cpu(confirmation["reason"]), confirmation


def _not_bounded_on_cpu(reason: str) -> bool:
    """A ReLU over 1 MiB: under a millisecond (not demonstrated), or, on a slow or busy host, a call
    whose values cost most of what it does (profiler_agent.judge.cpu_demonstration)."""
    return reason == timing_confirmation.NO_PROFILER_ON_CPU or reason.startswith("the harness's own work")



@pytest.mark.parametrize("loaded_native, kernel, custom", [
    (True, OWN_STYLE_KERNEL, True),  # a kernel the reference did not launch and no library owns
    (True, ATEN_KERNEL, False),  # the reference's own ATen kernel: nothing custom
])
def test_the_census_is_taken_outside_from_ncus_record(make_bundle, stand_in_ncu, tmp_path, shared_build_cache,
                                                    loaded_native, kernel, custom):
    stand_in_ncu(table=_table([(_call(i), kernel, 5000) for i in range(3)] + [(REFERENCE_STACK, ATEN_KERNEL, 9000)]))
    result = _judged(1.0, 1e-6, flags=() if loaded_native else ("no_custom_kernel",))
    outcome = _confirm(make_bundle(ATEN_RELU), result, tmp_path, shared_build_cache)
    assert outcome.census["candidate"] == [kernel] and outcome.census["reference"] == [ATEN_KERNEL]
    assert outcome.custom_kernel is custom
    timing_confirmation.apply_outcome(result, outcome)
    result_schema.validate_result(result)
    assert ("no_custom_kernel" in result["flags"]) is (not custom)
    assert result["kernels"]["seen"] == "cuda_kernels"
