"""The profile report's reading of Nsight Compute's table (profiler_agent.judge.profile_output).

No ncu runs here (no GPU): the tables are built by these tests in the layout of `ncu --csv --page details
--print-units base` with `--nvtx` (the layout of the H100 recording tests/agent/fixtures/ncu_h100_relu.csv,
the NVTX stack columns the timing confirmation reads on H100s and H200s, and the rule columns newer versions
add). The GPU bench (bench/judge/profile_report.sh) keeps the real tool's table of each report it makes and
reads it again with this parser, so a layout this test does not know shows there."""

import csv
import io
from pathlib import Path

import pytest

from profiler_agent.judge import profile_output
from profiler_agent.judge.ncu_output import NcuOutputError
from profiler_agent.protocol import result_schema

STACK = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
COLUMNS = ["ID", "Process ID", "Process Name", "Host Name", STACK,
           "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg", "Kernel Name", "Context",
           "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
           "Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]
CANDIDATE_STACK = ('4321  "<default domain>:profiler_agent call 0:none:none:none:none:none:none"  '
                   '"<default domain>:candidate:none:none:none:none:none:none" ')
REFERENCE_STACK = ('4321  "<default domain>:profiler_agent call 0:none:none:none:none:none:none"  '
                   '"<default domain>:profiler_agent reference:none:none:none:none:none:none"  '
                   '"<default domain>:candidate:none:none:none:none:none:none" ')
SOL, CLI = "GPU Speed Of Light Throughput", "Command line profiler metrics"
# ncu 2025.3.1 on an H200, examples/001-example's profile (bench/judge/profile_report.sh): its metric rows
# end at their value, leaving the rule columns of the header off
RECORDED_H200 = Path(__file__).parent / "fixtures" / "ncu_h200_profile_relu.csv"


def stall(reason):
    return profile_output.STALL_METRIC.format(reason)


def rows_of(launch, kernel, stack, block, grid, metrics):
    """One launch's rows: (section, name, unit, value) each."""
    return [[str(launch), "4321", "python3.12", "127.0.0.1", stack, "", kernel, "1", "7", block, grid, "0", "9.0",
             section, name, unit, value, "", "", "", "", ""] for section, name, unit, value in metrics]


def table(*launches, preamble=("==PROF== Connected to process 4321 (/usr/bin/python3.12)",)):
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(COLUMNS)
    for rows in launches:
        writer.writerows(rows)
    return "\n".join([*preamble, out.getvalue(), "==PROF== Disconnected from process 4321"])


GELU = "lb_bias_gelu_kernel(const float *, const float *, float *, long, long)"
GEMM = "ampere_sgemm_64x64_nn"
# a bias-and-GELU kernel: the sections' own rows and the listed metrics, in base units
GELU_METRICS = [
    (SOL, "Duration", "nsecond", "5,120"),
    (SOL, "Compute (SM) Throughput", "%", "31.25"),
    (SOL, "Memory Throughput", "%", "78.50"),
    (SOL, "DRAM Throughput", "%", "78.50"),
    (SOL, "L2 Cache Throughput", "%", "40.10"),
    ("Occupancy", "Theoretical Occupancy", "%", "100"),
    ("Occupancy", "Achieved Occupancy", "%", "86.40"),
    ("Launch Statistics", "Registers Per Thread", "register/thread", "16"),
    (CLI, profile_output.DURATION, "nsecond", "5,120"),
    (CLI, profile_output.SM_PCT, "%", "31.25"),
    (CLI, profile_output.MEMORY_PCT, "%", "78.50"),
    (CLI, profile_output.DRAM_PCT, "%", "78.50"),
    (CLI, profile_output.L2_PCT, "%", "40.10"),
    (CLI, profile_output.OCCUPANCY, "%", "86.40"),
    (CLI, profile_output.THEORETICAL_OCCUPANCY, "%", "100"),
    (CLI, profile_output.REGISTERS, "register/thread", "16"),
    (CLI, profile_output.DRAM_BYTES, "byte", "1,048,576"),
    (CLI, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "131,072"),
    (CLI, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "393,216"),
    (CLI, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "262,144"),
    (CLI, "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", "inst", "0"),
    (CLI, "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", "inst", "0"),
    (CLI, stall("long_scoreboard"), "inst", "12.5"),
    (CLI, stall("selected"), "inst", "1"),
    (CLI, stall("wait"), "inst", "2.5"),
    (CLI, stall("not_selected"), "inst", "0.5"),
    (CLI, stall("math_pipe_throttle"), "inst", "1.5"),
    (CLI, stall("barrier"), "inst", "0"),
    (CLI, stall("sleeping"), "inst", "n/a"),
]
GEMM_METRICS = [
    (CLI, profile_output.DURATION, "nsecond", "9,000"),
    (CLI, profile_output.SM_PCT, "%", "72"),
    (CLI, profile_output.DRAM_PCT, "%", "12"),
    (CLI, profile_output.L2_PCT, "%", "30"),
    (CLI, profile_output.OCCUPANCY, "%", "24.9"),
    (CLI, profile_output.REGISTERS, "register/thread", "122"),
    (CLI, profile_output.DRAM_BYTES, "byte", "4,194,304"),
    (CLI, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "33,554,432"),
    (CLI, stall("math_pipe_throttle"), "inst", "3"),
    (CLI, stall("selected"), "inst", "1"),
]


def bundle_table():
    """The candidate's GEMM and GELU, then the reference's GEMM, as a profile run of lb-mlp-gelu prints them."""
    return table(rows_of(0, GEMM, CANDIDATE_STACK, "(128, 1, 1)", "(16, 32, 1)", GEMM_METRICS),
                 rows_of(1, GELU, CANDIDATE_STACK, "(256, 1, 1)", "(512, 1, 1)", GELU_METRICS),
                 rows_of(2, GEMM, REFERENCE_STACK, "(128, 1, 1)", "(16, 32, 1)", GEMM_METRICS))


def test_each_launch_becomes_a_kernel_record_with_its_model_and_launch_configuration():
    records, models = profile_output.kernels_per_model(profile_output.parse(bundle_table()), cap=20)
    assert [(r["launch"], r["model"], r["name"]) for r in records] == [
        (0, "candidate", GEMM), (1, "candidate", GELU), (2, "reference", GEMM)]
    gelu = records[1]
    assert gelu["grid"] == [512, 1, 1] and gelu["block"] == [256, 1, 1] and gelu["registers"] == 16
    assert gelu["duration_ms"] == pytest.approx(5.12e-3)  # 5,120 ns
    assert (gelu["sm_pct"], gelu["memory_pct"], gelu["dram_pct"], gelu["l2_pct"]) == (31.25, 78.5, 78.5, 40.1)
    assert (gelu["achieved_occupancy_pct"], gelu["theoretical_occupancy_pct"]) == (86.4, 100.0)
    assert models == {"candidate": {"kernels": 2, "duration_ms": pytest.approx(14.12e-3), "capped": False},
                      "reference": {"kernels": 1, "duration_ms": pytest.approx(9e-3), "capped": False}}


def test_flops_count_an_fma_as_two_and_give_the_roofline_position():
    gelu = profile_output.kernels_per_model(profile_output.parse(bundle_table()), cap=20)[0][1]
    flops = 131_072 + 393_216 + 2 * 262_144
    assert gelu["flops"] == flops and gelu["dram_bytes"] == 1_048_576
    assert gelu["flop_per_s"] == pytest.approx(flops / 5.12e-6)
    assert gelu["arithmetic_intensity"] == pytest.approx(flops / 1_048_576)


def test_the_top_three_stalls_are_shares_of_every_cycle_between_issues_never_the_issue_itself():
    gelu = profile_output.kernels_per_model(profile_output.parse(bundle_table()), cap=20)[0][1]
    whole = 12.5 + 1 + 2.5 + 0.5 + 1.5  # "selected" counts in the whole; n/a and zero are no reason
    assert gelu["stalls"] == [
        {"reason": "long_scoreboard", "share_pct": pytest.approx(100 * 12.5 / whole), "cycles_per_instruction": 12.5},
        {"reason": "wait", "share_pct": pytest.approx(100 * 2.5 / whole), "cycles_per_instruction": 2.5},
        {"reason": "math_pipe_throttle", "share_pct": pytest.approx(100 * 1.5 / whole), "cycles_per_instruction": 1.5},
    ]


def test_a_run_with_the_sections_alone_is_read_from_their_labels():
    """ncu refused the metric list: the sections' rows still give the launch figures, no FLOPs, no stalls."""
    labelled = [row for row in GELU_METRICS if row[0] != CLI]
    gelu = profile_output.kernel_record(profile_output.parse(table(rows_of(0, GELU, CANDIDATE_STACK, "(256, 1, 1)",
                                                                           "(512, 1, 1)", labelled)))[0])
    assert gelu["duration_ms"] == pytest.approx(5.12e-3) and gelu["registers"] == 16
    assert (gelu["sm_pct"], gelu["memory_pct"], gelu["dram_pct"], gelu["l2_pct"]) == (31.25, 78.5, 78.5, 40.1)
    assert gelu["achieved_occupancy_pct"] == 86.4
    assert gelu["flops"] is None and gelu["flop_per_s"] is None and gelu["arithmetic_intensity"] is None
    assert gelu["stalls"] == []


def test_memory_throughput_in_bytes_per_second_is_not_taken_for_a_share():
    rows = [(SOL, "Memory Throughput", "byte/second", "1,200,000,000"), (SOL, "Duration", "usecond", "2.5")]
    record = profile_output.kernel_record(profile_output.parse(table(rows_of(0, GELU, CANDIDATE_STACK, "(1, 1, 1)",
                                                                            "(1, 1, 1)", rows)))[0])
    assert record["memory_pct"] is None and record["duration_ms"] == pytest.approx(2.5e-3)


def test_scaled_units_are_read_back_in_their_base():
    rows = [(CLI, profile_output.DRAM_BYTES, "Mbyte", "2.5"),
            (CLI, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "Kinst", "4"),
            (CLI, profile_output.DURATION, "msecond", "1.5")]
    record = profile_output.kernel_record(profile_output.parse(table(rows_of(0, GELU, CANDIDATE_STACK, "(1, 1, 1)",
                                                                            "(1, 1, 1)", rows)))[0])
    assert record["dram_bytes"] == 2.5e6 and record["flops"] == 8e3 and record["duration_ms"] == 1.5


def test_the_cap_keeps_each_models_first_kernels_and_says_which_may_be_cut():
    # the candidate launched 3 kernels, the cap is 2: ncu stopped after 4 launches, one of them the reference's
    launches = [rows_of(i, f"k{i}", CANDIDATE_STACK, "(1, 1, 1)", "(1, 1, 1)", GEMM_METRICS) for i in range(3)]
    launches.append(rows_of(3, "ref0", REFERENCE_STACK, "(1, 1, 1)", "(1, 1, 1)", GEMM_METRICS))
    records, models = profile_output.kernels_per_model(profile_output.parse(table(*launches)), cap=2)
    assert [(r["model"], r["name"]) for r in records] == [("candidate", "k0"), ("candidate", "k1"), ("reference", "ref0")]
    assert models["candidate"]["capped"] and models["reference"]["capped"]
    assert (models["candidate"]["kernels"], models["reference"]["kernels"]) == (2, 1)


def test_without_nvtx_columns_the_model_is_unknown_and_nothing_is_guessed():
    plain = "\n".join(line for line in bundle_table().splitlines())
    reader = list(csv.reader(io.StringIO(plain.split("\n", 1)[1])))
    header, body = reader[0], [row for row in reader[1:] if row and row[0].isdigit()]
    keep = [i for i, column in enumerate(header) if "Range" not in column]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows([[row[i] for i in keep] for row in [header, *body]])
    records, models = profile_output.kernels_per_model(profile_output.parse(out.getvalue()), cap=20)
    assert [r["model"] for r in records] == [None, None, None]
    assert models["candidate"]["kernels"] == models["reference"]["kernels"] == 0


def test_ncu_2025_3s_rows_without_their_rule_columns_are_read():
    text = RECORDED_H200.read_text()
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    assert len(rows[1]) < len(rows[0])  # what the H200's table looks like: shorter rows than the header
    launches = profile_output.parse(text)
    assert [launch.model for launch in launches] == ["candidate", "reference"]
    assert launches[0].name.startswith("relu_kernel_vec4")
    record = profile_output.kernel_record(launches[0])
    assert record["duration_ms"] > 0 and 0 < record["dram_pct"] <= 100 and record["block"] == [256, 1, 1]
    assert [stall["reason"] for stall in record["stalls"]][0] == "long_scoreboard"  # a memory-bound copy


def test_hoppers_wgmma_stall_is_asked_for_on_hopper_alone_and_read_as_a_reason():
    gmma = stall("gmma")
    assert gmma in profile_output.metrics_for("9.0")
    for other in ("8.0", "8.9", "10.0", "unknown"):
        assert gmma not in profile_output.metrics_for(other)
        assert set(profile_output.metrics_for(other)) == set(profile_output.METRICS)
    metrics = [(CLI, stall("gmma"), "", "6.0"), (CLI, stall("long_scoreboard"), "", "1.0"),
               (CLI, stall("selected"), "", "1.0")]
    launch = profile_output.parse(table(rows_of(0, GEMM, CANDIDATE_STACK, "(128, 1, 1)", "(1, 1, 1)", metrics)))[0]
    assert [(s["reason"], round(s["share_pct"])) for s in profile_output.stall_breakdown(launch)] == [
        ("gmma", 75), ("long_scoreboard", 12)]


def test_a_row_cut_before_its_value_is_still_refused():
    whole = rows_of(0, GELU, CANDIDATE_STACK, "(1, 1, 1)", "(1, 1, 1)", [(SOL, "Duration", "nsecond", "5")])[0]
    short = whole[:COLUMNS.index("Metric Value")]
    with pytest.raises(NcuOutputError, match="wrong number of fields"):
        profile_output.parse(table([short]))


@pytest.mark.parametrize("text, message", [
    ('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","k","x","%","1"', "no column 'Section Name'"),
    (table([["x", *["" for _ in COLUMNS[1:]]]]), "launch ID 'x' is not a number"),
    (table([rows_of(0, GELU, CANDIDATE_STACK, "(1, 1, 1)", "(1, 1, 1)",
                    [(CLI, profile_output.DURATION, "fortnight", "1")])[0]]), "unknown unit 'fortnight'"),
])
def test_a_table_that_cannot_be_read_says_why(text, message):
    with pytest.raises(NcuOutputError, match=message):
        profile_output.kernel_record(profile_output.parse(text)[0])


def test_output_without_a_table_has_no_launches():
    assert profile_output.parse("==PROF== Connected\n==WARNING== No kernels were profiled.\n") == []
    assert not profile_output.has_table("==PROF== Report: /tmp/x/profile.ncu-rep\n")


def test_every_record_fits_the_result_schema():
    records, models = profile_output.kernels_per_model(profile_output.parse(bundle_table()), cap=20)
    for record in records:
        assert set(record) == set(result_schema.PROFILED_KERNEL_SHAPE)
    profile = {"available": True, "tool": "ncu", "version": "Version 2025.3", "vendor": "nvidia", "reason": None,
               "kernels_per_model": 20, "sections": list(profile_output.SECTIONS), "clock_control": "none",
               "metrics": "listed", "table_source": "profile run", "kernels": records, "models": models,
               "report_file": {"name": "profile.ncu-rep", "bytes": 10, "sha256": "0" * 64, "stored": None, "why": None},
               "duration_s": 1.0}
    result = result_schema.empty_result()
    result.update(status="passed", profile=profile)
    result["device"]["kind"] = "cuda"
    result_schema.validate_result(result)
    profile["kernels"][0]["stalls"].append({"reason": "wait"})
    with pytest.raises(ValueError, match=r"profile.kernels\[0\].stalls\[1\]"):
        result_schema.validate_result(result)
