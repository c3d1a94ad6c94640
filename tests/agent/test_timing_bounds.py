"""The bounds of the timing confirmation (profiler_agent.judge.timing_bounds): the kernel record read
from ncu output recorded on an H100, the decision at its edges, the census's record, and the figure
ranked when a bound fails. The processes that take the figures: tests/agent/test_confirm.py."""

import statistics
from pathlib import Path

import pytest

from profiler_agent.protocol import result_schema
from profiler_agent.measure import metrics
from profiler_agent.judge import ncu_output, timing_bounds, timing_confirmation

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
    record = timing_bounds.kernel_record(RECORDED_H100.read_text(), calls=4, launch_cap=400)
    assert record.kernel_ms == pytest.approx(statistics.median(RECORDED_NS) * 1e-6, rel=1e-12)
    assert (record.calls, record.capped) == (4, False)
    record = timing_bounds.kernel_record(CONSTRUCTED.read_text(), calls=2, launch_cap=200)
    # 2 + 3 kernels: the NVTX stack column tells the calls apart
    assert record.kernel_ms == pytest.approx(statistics.median([0.01225 + 0.0015, 0.01275 + 0.0015 + 0.002048]))
    assert record.calls == 2


def test_a_capped_record_keeps_the_cut_call_as_a_lower_bound():
    # the cap (5 launches) may have cut the second call: its sum so far is still below its whole
    record = timing_bounds.kernel_record(CONSTRUCTED.read_text(), calls=2, launch_cap=5)
    assert record.capped is True and record.calls == 2
    assert record.kernel_ms == pytest.approx(statistics.median([0.01375, 0.01275 + 0.0015 + 0.002048]))


def test_a_capped_record_without_call_ranges_is_not_guessed():
    with pytest.raises(ncu_output.NcuOutputError, match=r"launch cap \(4\)"):
        timing_bounds.kernel_record(RECORDED_H100.read_text(), calls=4, launch_cap=4)


@pytest.mark.parametrize("text", ["", "==WARNING== No kernels were profiled.\n"])
def test_no_kernel_in_the_range_is_no_record(text):
    with pytest.raises(timing_bounds.NoKernels):
        timing_bounds.kernel_record(text, calls=3, launch_cap=300)


def test_a_kernel_without_a_duration_is_no_record():
    text = RECORDED_3_CALLS.replace('"ns","6,144"', '"ns","n/a"', 1)
    with pytest.raises(ncu_output.NcuOutputError, match="no duration"):
        timing_bounds.kernel_record(text, calls=3, launch_cap=300)


# --- the decision ----------------------------------------------------------------------------------------

RECORD = timing_bounds.KernelRecord(kernel_ms=1.0, calls=3, capped=False)


def _decide(reported, reference_reported=1.0, record=RECORD, outside=1.0, record_why="", reference_why=""):
    confirmation = timing_bounds.decide(reported, reference_reported, record, record_why, outside, reference_why)
    result = result_schema.empty_result()
    result.update(status="passed")
    result["device"]["kind"] = "cuda"
    result["timing"]["confirmation"] = confirmation
    result_schema.validate_result(result)  # every decision fits the schema
    return confirmation


def test_the_candidate_bound_at_the_tolerance_edge():
    edge = 1.0 - timing_bounds.TOLERANCE
    assert _decide(edge)["confirmed"] is True
    assert _decide(edge * 1.001)["confirmed"] is True
    below = _decide(edge * 0.999)
    assert below["confirmed"] is False and "below the GPU's own record" in below["reason"]
    assert below["ratio"] == pytest.approx(edge * 0.999) and below["tolerance"] == timing_bounds.TOLERANCE
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
    record = timing_bounds.KernelRecord(kernel_ms=0.00586, calls=3, capped=False)
    result = _passed_result(0.0113, 0.0055)
    timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_bounds.decide(0.0055, 0.0113, record, "", 0.0113, "")))
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
        timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_bounds.decide(reported, 0.0113, record, "", 0.0113, "")))
        assert result["timing"]["candidate"]["median_ms"] == reported
        assert result["timing"]["confirmation"]["ranked_at_kernel_ms"] is False
    # past the tolerance: not believed and flagged; what it shows (and what clearing the flag would rank)
    # is the record's figure, its own kept apart
    forged = 0.00586 / 3
    result = _passed_result(0.0113, forged)
    timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_bounds.decide(forged, 0.0113, record, "", 0.0113, "")))
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
    edge = 1.0 * (1 + timing_bounds.REFERENCE_TOLERANCE) + timing_bounds.REFERENCE_SLACK_MS
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
    record = timing_bounds.kernel_record(text, calls=3, launch_cap=timing_confirmation.PROFILE.candidate_cap)
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
    record = timing_bounds.kernel_record(whole, calls=3, launch_cap=300, reference_calls=3, total_cap=400)
    assert record.kernel_ms == pytest.approx(5601e-6)  # the candidate's record leaves the reference out
    assert record.reference_kernel_ms == pytest.approx(11100e-6)  # median of 11000, 11400, 11100 ns
    assert record.reference_kernels == [ATEN_KERNEL, LAYER_NORM_KERNEL]
    # a reference call cut short or missing, the launch count reached, or no call ranges: no record
    cut = _table(candidate + reference[:-1])
    assert timing_bounds.kernel_record(cut, calls=3, launch_cap=300, reference_calls=3, total_cap=8).reference_kernel_ms is None
    missing = _table(candidate + reference[:-2])
    assert timing_bounds.kernel_record(missing, 3, 300, reference_calls=3, total_cap=400).reference_kernel_ms is None
    assert timing_bounds.kernel_record(whole, 3, 300, reference_calls=3, total_cap=9).reference_kernel_ms is None
    census_only = _table(candidate + [(REFERENCE_STACK, ATEN_KERNEL, 9000)])
    assert timing_bounds.kernel_record(census_only, 3, 300, reference_calls=1, total_cap=400).reference_kernel_ms is None
    assert timing_bounds.kernel_record(whole, 3, 300).reference_kernel_ms is None  # not asked for


def _ranked(record, reference_ms, candidate_ms, outside=None):
    outside = reference_ms if outside is None else outside
    result = _passed_result(reference_ms, candidate_ms)
    timing_confirmation.apply_outcome(result, timing_confirmation.Outcome(timing_bounds.decide(candidate_ms, reference_ms, record, "", outside, "")))
    result_schema.validate_result(result)
    return result


def test_no_speedup_is_ranked_above_the_kernel_record_of_both_models():
    # lb-add-layernorm on the H100: the candidate read 5.50 us for 5.57 us of kernels, the
    # reference 11.14 us for 11.1; timed speedup 2.025 against the profile's 11.1 / 5.57
    record = timing_bounds.KernelRecord(kernel_ms=0.00557, calls=3, capped=False, reference_kernel_ms=0.0111)
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
    record = timing_bounds.KernelRecord(kernel_ms=0.0421, calls=3, capped=False, reference_kernel_ms=0.0477)
    result = _ranked(record, 0.04518, 0.03946)
    assert result["timing"]["speedup"] == pytest.approx(0.0477 / 0.0421)
    without_reference = timing_bounds.KernelRecord(kernel_ms=0.0421, calls=3, capped=False)
    assert _ranked(without_reference, 0.04518, 0.03946)["timing"]["speedup"] == pytest.approx(0.04518 / 0.0421)


def test_a_speedup_under_the_kernel_record_is_left_as_timed():
    # lb-add-layernorm judged right after its compile: 1.961 timed, under the profile's 1.99
    record = timing_bounds.KernelRecord(kernel_ms=0.00557, calls=3, capped=False, reference_kernel_ms=0.0111)
    for reference_ms, candidate_ms in ((0.01059, 0.0054), (0.0111, 0.00557), (0.0199, 0.0100)):
        result = _ranked(record, reference_ms, candidate_ms)
        assert result["timing"]["candidate"]["median_ms"] == candidate_ms
        assert result["timing"]["speedup"] == pytest.approx(reference_ms / candidate_ms)
        assert result["timing"]["confirmation"]["ranked_at_kernel_ms"] is False


def test_forged_records_can_only_lower_a_speedup():
    # the records come from a process that runs submission code: a candidate that hides its kernels
    # from the profiled range (a tiny record) or slows the reference there (a big one) raises the
    # ratio, which only caps the timed speedup: it is left as timed
    for forged in (timing_bounds.KernelRecord(kernel_ms=1e-6, calls=3, capped=False, reference_kernel_ms=0.0111),
                   timing_bounds.KernelRecord(kernel_ms=0.0050, calls=3, capped=False, reference_kernel_ms=1.0)):
        result = _ranked(forged, 0.0111, 0.0055)
        assert result["timing"]["speedup"] == pytest.approx(0.0111 / 0.0055)
    # a timed speedup far past the ratio, with the candidate under its record by more than the
    # tolerance, is not believed: flagged, and shown (and ranked, were the flag cleared) at the ratio
    record = timing_bounds.KernelRecord(kernel_ms=0.00557, calls=3, capped=False, reference_kernel_ms=0.0111)
    result = _ranked(record, 0.0111, 0.00557 / 3)
    assert "timing_unconfirmed" in result["flags"]
    assert result["timing"]["speedup"] == pytest.approx(0.0111 / 0.00557)
    assert result["timing"]["confirmation"]["timed_speedup"] == pytest.approx(3 * 0.0111 / 0.00557)


def test_an_inflated_reference_is_ranked_at_the_agents_own_timing_of_it():
    """The reference made slow inside the judged process (its median above the agent's own timing of
    it, past the bound): flagged, and the speedup is taken against the agent's figure."""
    record = timing_bounds.KernelRecord(kernel_ms=0.0050, calls=3, capped=False)
    result = _ranked(record, 0.0300, 0.0050, outside=0.0100)
    assert "timing_unconfirmed" in result["flags"] and result["timing"]["confirmation"]["confirmed"] is False
    assert result["timing"]["speedup"] == pytest.approx(0.0100 / 0.0050)
    assert result["timing"]["confirmation"]["timed_speedup"] == pytest.approx(0.0300 / 0.0050)
    # within the bound: the timed figure stands
    honest = _ranked(record, 0.0105, 0.0050, outside=0.0100)
    assert honest["timing"]["speedup"] == pytest.approx(0.0105 / 0.0050) and "timing_unconfirmed" not in honest["flags"]


WARM_UP_STACK = "<default domain>:profiler_agent warm-up:<default domain>:candidate"
FILL_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T3, T4)"


def test_the_warm_up_launch_is_read_only_as_the_first_one():
    calls = [(_call(i), OWN_STYLE_KERNEL, 5000 + i) for i in range(3)]
    record = timing_bounds.kernel_record(_table([(WARM_UP_STACK, FILL_KERNEL, 900000)] + calls), calls=3, launch_cap=300)
    assert record.kernel_ms == pytest.approx(5001e-6) and record.candidate_kernels == [OWN_STYLE_KERNEL]
    # a launch in that range after the first ran beside submission code: it is no warm-up, and a
    # launch of no call makes the calls' record unreadable (a candidate cannot hide kernels in it)
    for later in ([calls[0], (WARM_UP_STACK, FILL_KERNEL, 10)] + calls[1:],
                  [(WARM_UP_STACK, FILL_KERNEL, 10), (WARM_UP_STACK, OWN_STYLE_KERNEL, 10)] + calls):
        with pytest.raises(ncu_output.NcuOutputError, match="some launches carry"):
            timing_bounds.kernel_record(_table(later), calls=3, launch_cap=300)
    # the warm-up range inside a call's is that call's
    inside = f"<default domain>:profiler_agent call 0:<default domain>:profiler_agent warm-up:<default domain>:candidate"
    record = timing_bounds.kernel_record(_table([(inside, OWN_STYLE_KERNEL, 7000)] + calls[1:]), calls=3, launch_cap=300)
    assert record.kernel_ms == pytest.approx(5002e-6) and sorted(record.candidate_kernels) == [OWN_STYLE_KERNEL]


def test_the_warm_up_takes_one_launch_of_the_cap_and_none_of_the_calls():
    profile = timing_confirmation.PROFILE
    assert profile.warm_up and profile.launch_cap == profile.calls_cap + 1
    unwarmed = ncu_output.Profile(profile.metrics, profile.calls, profile.kernels_per_call,
                                  reference_calls=profile.reference_calls)
    assert profile.calls_cap == unwarmed.launch_cap
