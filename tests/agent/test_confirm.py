"""The timing confirmation (profiler_agent.judge.timing_confirmation): the kernel record read from ncu output
recorded on an H100, the decision at its edges, and the whole chain (a stand-in `ncu` running the real
profiled process in the sandbox, the trusted check verifying its outputs and timing the reference)
on CPU, where no GPU and no Nsight Compute exist. The GPU check is bench/judge/timing_confirmation.py."""

import os
import statistics
import sys
from pathlib import Path

import pytest

from profiler_agent.protocol import result_schema
from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.judge.judging import snapshot_sources
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.measure import metrics
from profiler_agent.judge import timing_confirmation, ncu_output
from tests.agent.conftest import EXAMPLES
from tests.agent.processes import wait_gone
from tests.agent.test_trials import STATEFUL_PORT, STATEFUL_REFERENCE

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RECORDED_H100 = FIXTURES / "ncu_h100_relu.csv"  # 4 launches of one ReLU, no NVTX column
CONSTRUCTED = FIXTURES / "ncu_constructed_nvtx_units.csv"  # 2 calls of 2 and 3 kernels, NVTX column
RECORDED_NS = [6144, 5824, 5728, 5888]


def _first_launches(count: int) -> str:
    """The recorded H100 table cut after `count` launches (real ncu text, fewer rows)."""
    lines = RECORDED_H100.read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith('"') or line.startswith('"ID"')
                   or int(line.split('","')[0].strip('"')) < count)


RECORDED_3_CALLS = _first_launches(3)
RECORDED_3_CALLS_MS = statistics.median(RECORDED_NS[:3]) * 1e-6


# --- the record ----------------------------------------------------------------------------------------

def test_the_record_is_the_median_of_each_calls_summed_kernels():
    record = timing_confirmation.kernel_record(RECORDED_H100.read_text(), calls=4, launch_cap=400)
    assert record.kernel_ms == pytest.approx(statistics.median(RECORDED_NS) * 1e-6, rel=1e-12)
    assert (record.calls, record.capped) == (4, False)
    record = timing_confirmation.kernel_record(CONSTRUCTED.read_text(), calls=2, launch_cap=200)
    # 2 + 3 kernels: the NVTX stack column tells the calls apart
    assert record.kernel_ms == pytest.approx(statistics.median([0.01225 + 0.0015, 0.01275 + 0.0015 + 0.002048]))
    assert record.calls == 2


def test_a_capped_record_keeps_the_cut_call_as_a_lower_bound():
    # the cap (5 launches) may have cut the second call: its sum so far is still below its whole
    record = timing_confirmation.kernel_record(CONSTRUCTED.read_text(), calls=2, launch_cap=5)
    assert record.capped is True and record.calls == 2
    assert record.kernel_ms == pytest.approx(statistics.median([0.01375, 0.01275 + 0.0015 + 0.002048]))


def test_a_capped_record_without_call_ranges_is_not_guessed():
    with pytest.raises(ncu_output.NcuOutputError, match=r"launch cap \(4\)"):
        timing_confirmation.kernel_record(RECORDED_H100.read_text(), calls=4, launch_cap=4)


@pytest.mark.parametrize("text", ["", "==WARNING== No kernels were profiled.\n"])
def test_no_kernel_in_the_range_is_no_record(text):
    with pytest.raises(timing_confirmation.NoKernels):
        timing_confirmation.kernel_record(text, calls=3, launch_cap=300)


def test_a_kernel_without_a_duration_is_no_record():
    text = RECORDED_3_CALLS.replace('"ns","6,144"', '"ns","n/a"', 1)
    with pytest.raises(ncu_output.NcuOutputError, match="no duration"):
        timing_confirmation.kernel_record(text, calls=3, launch_cap=300)


# --- the decision ----------------------------------------------------------------------------------------

RECORD = timing_confirmation.KernelRecord(kernel_ms=1.0, calls=3, capped=False)


def _decide(reported, reference_reported=1.0, record=RECORD, outside=1.0, record_why="", reference_why=""):
    confirmation = timing_confirmation.decide(reported, reference_reported, record, record_why, outside, reference_why)
    result = result_schema.empty_result()
    result.update(status="passed")
    result["device"]["kind"] = "cuda"
    result["timing"]["confirmation"] = confirmation
    result_schema.validate_result(result)  # every decision fits the schema
    return confirmation


def test_the_candidate_bound_at_the_tolerance_edge():
    edge = 1.0 - timing_confirmation.TOLERANCE
    assert _decide(edge)["confirmed"] is True
    assert _decide(edge * 1.001)["confirmed"] is True
    below = _decide(edge * 0.999)
    assert below["confirmed"] is False and "below the GPU's own record" in below["reason"]
    assert below["ratio"] == pytest.approx(edge * 0.999) and below["tolerance"] == timing_confirmation.TOLERANCE
    # an honest time is at least the record: launch gaps only add to it
    assert _decide(1.4)["confirmed"] is True and _decide(1.4)["ratio"] == pytest.approx(1.4)


def _passed_result(reference_ms, candidate_ms, flops=None, nbytes=4_000_000):
    result = result_schema.empty_result()
    result.update(status="passed")
    result["device"].update(kind="cuda", peak_gbps=3352.0, peak_tflops=66.9)
    result["timing"]["reference"]["median_ms"], result["timing"]["candidate"]["median_ms"] = reference_ms, candidate_ms
    result["timing"]["speedup"] = reference_ms / candidate_ms
    result["metrics"] = metrics.derived_metrics(flops, nbytes, candidate_ms, 3352.0, 66.9)
    return result


def test_a_candidate_under_its_kernel_record_is_ranked_at_the_record():
    # lb-add-layernorm on the H100: 0.0055 ms net for a 0.00586 ms kernel, the reference at 0.0113 ms
    record = timing_confirmation.KernelRecord(kernel_ms=0.00586, calls=3, capped=False)
    result = _passed_result(0.0113, 0.0055)
    timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_confirmation.decide(0.0055, 0.0113, record, "", 0.0113, "")))
    result_schema.validate_result(result)
    timing, confirmation = result["timing"], result["timing"]["confirmation"]
    assert confirmation["confirmed"] is True and confirmation["ranked_at_kernel_ms"] is True
    assert confirmation["reported_ms"] == 0.0055  # the judged process's own figure stays on record
    assert timing["candidate"]["median_ms"] == 0.00586 and timing["speedup"] == pytest.approx(0.0113 / 0.00586)
    assert result["metrics"]["bandwidth_gbs"] == pytest.approx(4_000_000 / 0.00586e-3 / 1e9)
    assert "is above the candidate's kernel record" in result["logs"]["stderr"] and "timing_unconfirmed" not in result["flags"]

    # at or above the record: nothing changes
    for reported in (0.00586, 0.0070):
        result = _passed_result(0.0113, reported)
        timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_confirmation.decide(reported, 0.0113, record, "", 0.0113, "")))
        assert result["timing"]["candidate"]["median_ms"] == reported
        assert result["timing"]["confirmation"]["ranked_at_kernel_ms"] is False
    # past the tolerance: not believed and flagged; what it shows (and what clearing the flag would rank)
    # is the record's figure, its own kept apart
    forged = 0.00586 / 3
    result = _passed_result(0.0113, forged)
    timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_confirmation.decide(forged, 0.0113, record, "", 0.0113, "")))
    result_schema.validate_result(result)
    assert "timing_unconfirmed" in result["flags"] and result["timing"]["confirmation"]["confirmed"] is False
    assert result["timing"]["candidate"]["median_ms"] == 0.00586
    assert result["timing"]["speedup"] == pytest.approx(0.0113 / 0.00586)
    assert result["timing"]["confirmation"]["ranked_at_kernel_ms"] is True
    assert result["timing"]["confirmation"]["timed_speedup"] == pytest.approx(0.0113 / forged)
    assert result["timing"]["confirmation"]["reported_ms"] == forged


def test_a_forger_dividing_by_three_is_caught():
    forged = _decide(1.02 / 3)
    assert forged["confirmed"] is False and forged["kernel_ms"] == 1.0 and forged["reported_ms"] == 1.02 / 3


def test_the_reference_bound_at_its_edge():
    edge = 1.0 * (1 + timing_confirmation.REFERENCE_TOLERANCE) + timing_confirmation.REFERENCE_SLACK_MS
    assert _decide(1.0, reference_reported=edge * 0.9999)["confirmed"] is True
    inflated = _decide(1.0, reference_reported=edge * 1.0001)
    assert inflated["confirmed"] is False and "reference's reported median" in inflated["reason"]
    assert inflated["reference_outside_ms"] == 1.0
    # a reference reported faster than the agent timed it only lowers the speedup: no finding
    assert _decide(1.0, reference_reported=0.5)["confirmed"] is True


def test_what_could_not_be_checked_is_unconfirmed_with_the_reason():
    timed_out = _decide(1.0, record=None, record_why="timed out after 120 s; ncu and the profiled process were killed")
    assert timed_out["confirmed"] is None and timed_out["reason"].startswith("timed out after 120 s")
    assert timed_out["kernel_ms"] is None and timed_out["method"] == "ncu"
    no_reference = _decide(1.0, outside=None, reference_why="the reference could not be timed outside: boom")
    assert no_reference["confirmed"] is None and "boom" in no_reference["reason"]
    # a failed bound is reported as failed even when the other could not be checked
    both = _decide(0.1, outside=None, reference_why="the reference could not be timed outside")
    assert both["confirmed"] is False and "below" in both["reason"] and "could not be timed" in both["reason"]


def test_the_schema_refuses_a_malformed_confirmation():
    result = result_schema.empty_result()
    result.update(status="passed")
    result["device"]["kind"] = "cuda"
    result["timing"]["confirmation"] = {**_decide(1.0), "confirmed": "yes"}
    with pytest.raises(ValueError, match="timing.confirmation.confirmed: expected bool or null, got str"):
        result_schema.validate_result(result)
    result["timing"]["confirmation"] = {**_decide(1.0), "extra": 1}
    with pytest.raises(ValueError, match=r"unknown keys \['extra'\]"):
        result_schema.validate_result(result)


# --- the chain, with a stand-in ncu ------------------------------------------------------------------------

STAND_IN = '''#!{python}
"""A stand-in for Nsight Compute's CLI, for tests only (no GPU here): takes the options the timing
confirmation passes, runs the target as ncu does (stdin passed on), writes `table` (output recorded on
an H100) to --log-file. MODE: replay, hang."""
import subprocess, sys, time

MODE = {mode!r}
TABLE = {table!r}
PID_FILE = {pid_file!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("Version 2025.3.0.0 (stand-in for tests)")
    sys.exit(0)
VALUED = {{"--clock-control", "--cache-control", "--target-processes", "--log-file", "--metrics",
          "--nvtx-include", "--launch-count"}}
options, i = {{}}, 0
while i < len(args) and args[i].startswith("--"):
    if args[i] in ("--csv", "--nvtx"):
        options[args[i]], i = True, i + 1
    elif args[i] in VALUED:
        options[args[i]], i = args[i + 1], i + 2
    else:
        sys.exit("==ERROR== unrecognised option %s" % args[i])
expected = {{"--clock-control": "none", "--cache-control": "none", "--metrics": "gpu__time_duration.sum",
            "--nvtx-include": "candidate/", "--launch-count": "400"}}
for key, value in expected.items():
    if options.get(key) != value:
        sys.exit("==ERROR== stand-in ncu: %s is %r, expected %r" % (key, options.get(key), value))
if "--seed" in args:
    sys.exit("==ERROR== stand-in ncu: the seed is on the command line, where anyone can read it")
if MODE == "hang":
    sleeper = subprocess.Popen(["sleep", "300"])
    open(PID_FILE, "w").write(str(sleeper.pid))
    time.sleep(300)
code = subprocess.run(args[i:]).returncode
if code == 0:
    open(options["--log-file"], "w").write(TABLE)
sys.exit(code)
'''


@pytest.fixture
def stand_in_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "sleeper.pid"

    def install(mode: str = "replay", table: str = RECORDED_3_CALLS) -> Path:
        script = bin_dir / "ncu"
        script.write_text(STAND_IN.format(python=sys.executable, mode=mode, table=table, pid_file=str(pid_file)))
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        return pid_file

    return install


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


def test_a_stateful_port_is_verified_in_the_profiled_calls_order(make_bundle, stand_in_ncu, tmp_path,
                                                                shared_build_cache):
    """The profiled process calls the candidate once to warm up, then once per trial: the verifier
    gives the reference the same calls, so its hidden state follows the candidate's."""
    stand_in_ncu()
    bundle = make_bundle(STATEFUL_PORT, **{"torchcode.py": STATEFUL_REFERENCE})
    outcome = _confirm(bundle, _judged(1.0, 1e-6), tmp_path, shared_build_cache)
    assert outcome.wrong_answer == "" and outcome.confirmation["method"] == "ncu"


def test_a_reported_time_below_the_record_is_not_confirmed(make_bundle, stand_in_ncu, tmp_path, shared_build_cache):
    stand_in_ncu()
    forged = RECORDED_3_CALLS_MS / 3
    confirmation = _confirm(make_bundle(ATEN_RELU), _judged(forged, 1e-6), tmp_path, shared_build_cache).confirmation
    assert confirmation["confirmed"] is False and "below the GPU's own record" in confirmation["reason"]


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


def test_the_timing_forger_on_cpu_is_marked_unconfirmed_but_not_flagged(make_bundle, judge):
    outcome = judge(make_bundle(TIMING_FORGER), "--timing-budget", "0.3")
    result = outcome.result
    assert result["status"] == "passed", result["logs"]["stderr"]
    confirmation = result["timing"]["confirmation"]
    assert confirmation["method"] is None and confirmation["confirmed"] is None
    assert confirmation["reason"] == "no device profiler on CPU"
    assert confirmation["reported_ms"] == result["timing"]["candidate"]["median_ms"]
    # CPU seasons still rank: no device profiler is not a finding against the run
    assert "timing_unconfirmed" not in result["flags"]


def test_an_honest_cpu_judgement_says_its_time_is_not_confirmed(make_bundle, judge):
    result = judge(make_bundle(ATEN_RELU), "--timing-budget", "0.3").result
    assert result["status"] == "passed"
    assert result["timing"]["confirmation"]["reason"] == timing_confirmation.NO_PROFILER_ON_CPU
    assert "timing_unconfirmed" not in result["flags"]


# --- the kernel census from ncu's record ---------------------------------------------------------------

NVTX_COLUMN = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def _table(launches) -> str:
    """ncu --csv --nvtx rows: (NVTX stack, kernel name, duration ns) per launch."""
    lines = [f'"ID","Process ID","{NVTX_COLUMN}","Kernel Name","Metric Name","Metric Unit","Metric Value"']
    for launch_id, (stack, kernel, ns) in enumerate(launches):
        lines.append(f'"{launch_id}","4321","{stack}","{kernel}","gpu__time_duration.sum","ns","{ns}"')
    return "\n".join(lines) + "\n"


def _call(i):
    return f"<default domain>:profiler_agent call {i}:<default domain>:candidate"


REFERENCE_STACK = "<default domain>:profiler_agent reference:<default domain>:candidate"
OWN_STYLE_KERNEL = "my_fused_relu_kernel(const float *, float *, long)"
ATEN_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::relu_functor>(int, T3, T4)"


def test_the_reference_census_call_is_left_out_of_the_record_and_named_apart():
    text = _table([(_call(i), OWN_STYLE_KERNEL, 5000 + i) for i in range(3)] + [(REFERENCE_STACK, ATEN_KERNEL, 9000)])
    record = timing_confirmation.kernel_record(text, calls=3, launch_cap=timing_confirmation.PROFILE.candidate_cap)
    assert record.kernel_ms == pytest.approx(5001e-6) and record.calls == 3
    assert record.candidate_kernels == [OWN_STYLE_KERNEL] and record.reference_kernels == [ATEN_KERNEL]


def _reference_call(i):
    return f"<default domain>:profiler_agent call {i}:<default domain>:profiler_agent reference:<default domain>:candidate"


LAYER_NORM_KERNEL = "void at::native::vectorized_layer_norm_kernel<float, float>(int, float, const T1 *, T1 *)"


def test_the_reference_record_is_taken_from_its_calls_in_the_same_profile():
    candidate = [(_call(i), OWN_STYLE_KERNEL, 5600 + i) for i in range(3)]
    reference = [(_reference_call(i), kernel, ns) for i, first in enumerate((9000, 9400, 9100))
                 for kernel, ns in ((ATEN_KERNEL, first), (LAYER_NORM_KERNEL, 2000))]
    whole = _table(candidate + reference)
    record = timing_confirmation.kernel_record(whole, calls=3, launch_cap=300, reference_calls=3, total_cap=400)
    assert record.kernel_ms == pytest.approx(5601e-6)  # the candidate's record leaves the reference out
    assert record.reference_kernel_ms == pytest.approx(11100e-6)  # median of 11000, 11400, 11100 ns
    assert record.reference_kernels == [ATEN_KERNEL, LAYER_NORM_KERNEL]
    # a reference call cut short or missing, the launch count reached, or no call ranges: no record
    cut = _table(candidate + reference[:-1])
    assert timing_confirmation.kernel_record(cut, calls=3, launch_cap=300, reference_calls=3, total_cap=8).reference_kernel_ms is None
    missing = _table(candidate + reference[:-2])
    assert timing_confirmation.kernel_record(missing, 3, 300, reference_calls=3, total_cap=400).reference_kernel_ms is None
    assert timing_confirmation.kernel_record(whole, 3, 300, reference_calls=3, total_cap=9).reference_kernel_ms is None
    census_only = _table(candidate + [(REFERENCE_STACK, ATEN_KERNEL, 9000)])
    assert timing_confirmation.kernel_record(census_only, 3, 300, reference_calls=1, total_cap=400).reference_kernel_ms is None
    assert timing_confirmation.kernel_record(whole, 3, 300).reference_kernel_ms is None  # not asked for


def _ranked(record, reference_ms, candidate_ms, outside=None):
    outside = reference_ms if outside is None else outside
    result = _passed_result(reference_ms, candidate_ms)
    timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_confirmation.decide(candidate_ms, reference_ms, record, "", outside, "")))
    result_schema.validate_result(result)
    return result


def test_no_speedup_is_ranked_above_the_kernel_record_of_both_models():
    # lb-add-layernorm on the H100: the candidate read 5.50 us for 5.57 us of kernels, the
    # reference 11.14 us for 11.1; timed speedup 2.025 against the profile's 11.1 / 5.57
    record = timing_confirmation.KernelRecord(kernel_ms=0.00557, calls=3, capped=False, reference_kernel_ms=0.0111)
    result = _ranked(record, 0.01114, 0.0055)
    timing, confirmation = result["timing"], result["timing"]["confirmation"]
    assert confirmation["confirmed"] is True and confirmation["ranked_at_kernel_ms"] is True
    assert confirmation["kernel_speedup"] == pytest.approx(0.0111 / 0.00557)
    assert timing["speedup"] == pytest.approx(0.0111 / 0.00557)
    assert timing["candidate"]["median_ms"] == pytest.approx(0.01114 * 0.00557 / 0.0111)
    assert confirmation["reported_ms"] == 0.0055 and timing["reference"]["median_ms"] == 0.01114
    assert result["metrics"]["bandwidth_gbs"] == pytest.approx(4_000_000 / (timing["candidate"]["median_ms"] * 1e-3) / 1e9)
    assert "above the kernels' record of both models" in result["logs"]["stderr"]


def test_the_kernel_ratio_is_clock_free_where_an_absolute_floor_was_not():
    # lb-mlp-gelu on the H100: timed 45.18 / 39.46 us (1.145) for a true 1.133, but its
    # profile ran slower: records of 42.1 (candidate) and, at the same clock, 47.7 (reference). The
    # floor at the candidate's record alone ranked it 1.072; the ratio of the records, 1.133.
    record = timing_confirmation.KernelRecord(kernel_ms=0.0421, calls=3, capped=False, reference_kernel_ms=0.0477)
    result = _ranked(record, 0.04518, 0.03946)
    assert result["timing"]["speedup"] == pytest.approx(0.0477 / 0.0421)
    without_reference = timing_confirmation.KernelRecord(kernel_ms=0.0421, calls=3, capped=False)
    assert _ranked(without_reference, 0.04518, 0.03946)["timing"]["speedup"] == pytest.approx(0.04518 / 0.0421)


def test_a_speedup_under_the_kernel_record_is_left_as_timed():
    # lb-add-layernorm judged right after its compile: 1.961 timed, under the profile's 1.99
    record = timing_confirmation.KernelRecord(kernel_ms=0.00557, calls=3, capped=False, reference_kernel_ms=0.0111)
    for reference_ms, candidate_ms in ((0.01059, 0.0054), (0.0111, 0.00557), (0.0199, 0.0100)):
        result = _ranked(record, reference_ms, candidate_ms)
        assert result["timing"]["candidate"]["median_ms"] == candidate_ms
        assert result["timing"]["speedup"] == pytest.approx(reference_ms / candidate_ms)
        assert result["timing"]["confirmation"]["ranked_at_kernel_ms"] is False


def test_forged_records_can_only_lower_a_speedup():
    # the records come from a process that runs submission code: a candidate that hides its kernels
    # from the profiled range (a tiny record) or slows the reference there (a big one) raises the
    # ratio, which only caps the timed speedup: it is left as timed
    for forged in (timing_confirmation.KernelRecord(kernel_ms=1e-6, calls=3, capped=False, reference_kernel_ms=0.0111),
                   timing_confirmation.KernelRecord(kernel_ms=0.0050, calls=3, capped=False, reference_kernel_ms=1.0)):
        result = _ranked(forged, 0.0111, 0.0055)
        assert result["timing"]["speedup"] == pytest.approx(0.0111 / 0.0055)
    # a timed speedup far past the ratio, with the candidate under its record by more than the
    # tolerance, is not believed: flagged, and shown (and ranked, were the flag cleared) at the ratio
    record = timing_confirmation.KernelRecord(kernel_ms=0.00557, calls=3, capped=False, reference_kernel_ms=0.0111)
    result = _ranked(record, 0.0111, 0.00557 / 3)
    assert "timing_unconfirmed" in result["flags"]
    assert result["timing"]["speedup"] == pytest.approx(0.0111 / 0.00557)
    assert result["timing"]["confirmation"]["timed_speedup"] == pytest.approx(3 * 0.0111 / 0.00557)


def test_an_inflated_reference_is_ranked_at_the_agents_own_timing_of_it():
    """The reference made slow inside the judged process (its median above the agent's own timing of
    it, past the bound): flagged, and the speedup is taken against the agent's figure."""
    record = timing_confirmation.KernelRecord(kernel_ms=0.0050, calls=3, capped=False)
    result = _ranked(record, 0.0300, 0.0050, outside=0.0100)
    assert "timing_unconfirmed" in result["flags"] and result["timing"]["confirmation"]["confirmed"] is False
    assert result["timing"]["speedup"] == pytest.approx(0.0100 / 0.0050)
    assert result["timing"]["confirmation"]["timed_speedup"] == pytest.approx(0.0300 / 0.0050)
    # within the bound: the timed figure stands
    honest = _ranked(record, 0.0105, 0.0050, outside=0.0100)
    assert honest["timing"]["speedup"] == pytest.approx(0.0105 / 0.0050) and "timing_unconfirmed" not in honest["flags"]


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
