"""Nsight Compute in the result (profiler_agent.judge.ncu_output): the parser on ncu output recorded on an H100, the
opt-in switches, the notes that say why `ncu` is null, and the process handling around a stand-in
`ncu` (this machine has no GPU and no Nsight Compute)."""

import json
import os
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from profiler_agent.judge import ncu_output, ncu_profiling
from profiler_agent.protocol import result_schema
from profiler_agent.__main__ import build_parser, main
from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.worker.agent_config import AgentConfig
from profiler_agent.worker.judge_job import judge_options
from tests.agent import stand_in_ncu
from tests.agent.conftest import EXAMPLES, REPO

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Recorded: the first bundle (ReLU, 1M floats) of `bench/judge/harness.py precision` on an H100.
RECORDED_H100 = FIXTURES / "ncu_h100_relu.csv"
# Constructed (says so in its first line): the NVTX stack column, other units, 2 + 3 kernels per call.
CONSTRUCTED = FIXTURES / "ncu_constructed_nvtx_units.csv"
RELU = "relu_kernel(const float *, float *, long)"
RECORDED_NS = [6144, 5824, 5728, 5888]
RECORDED_READ = [4200448, 4200192, 4200192, 4200192]
H100_PEAK_GBPS = 3352.0


# --- the parser -------------------------------------------------------------------------------------

def test_recorded_h100_launches_parse_exactly_with_thousands_separators():
    launches = ncu_output.parse_launches(RECORDED_H100.read_text())
    assert [k.launch_id for k in launches] == [0, 1, 2, 3]
    assert {k.kernel for k in launches} == {RELU}
    assert [k.dram_read_bytes for k in launches] == RECORDED_READ  # "4,200,448" and friends
    assert [k.dram_write_bytes for k in launches] == [0, 0, 0, 0]
    assert [k.duration_ms for k in launches] == pytest.approx([ns * 1e-6 for ns in RECORDED_NS], rel=1e-12)
    assert all(k.call is None for k in launches)  # recorded without --nvtx: no stack column


def test_recorded_h100_output_summarizes_per_call_medians():
    figures, why = ncu_output.figures_from_output(RECORDED_H100.read_text(), 4, H100_PEAK_GBPS, "Version 2025.3")
    assert why == ""
    per_call_gbs = [r / ns for r, ns in zip(RECORDED_READ, RECORDED_NS)]  # bytes per ns = GB/s
    assert figures == {
        "kernels": [RELU],
        "calls": 4,
        "duration_ms": pytest.approx(statistics.median(RECORDED_NS) * 1e-6, rel=1e-12),
        "dram_read_bytes": 4200192,
        "dram_write_bytes": 0,
        "dram_bandwidth_gbs": pytest.approx(statistics.median(per_call_gbs), rel=1e-12),
        "pct_peak_bandwidth": pytest.approx(100 * statistics.median(per_call_gbs) / H100_PEAK_GBPS, rel=1e-12),
        "version": "Version 2025.3",
    }
    assert isinstance(figures["dram_read_bytes"], int)


def test_the_whole_bench_recording_parses_and_ignores_what_is_not_the_table():
    launches = ncu_output.parse_launches((REPO / "bench" / "results" / "precision" / "ncu.log").read_text())
    assert len(launches) == 20  # 5 bundles x 4 launches; the "--- stderr ---" trailer is not a row
    assert [k.kernel.split("(")[0] for k in launches[::4]] == ["relu_kernel"] * 3 + ["gemm_naive_kernel", "softmax_kernel"]
    assert launches[8].dram_read_bytes == 268_454_400 and launches[8].dram_write_bytes == 248_032_512
    assert launches[19].duration_ms == pytest.approx(69_632e-6, rel=1e-12)


def test_nvtx_call_ranges_group_kernels_and_units_are_scaled():
    launches = ncu_output.parse_launches(CONSTRUCTED.read_text())
    assert [k.call for k in launches] == [0, 0, 1, 1, 1]
    assert launches[0].dram_read_bytes == pytest.approx(1_024_500)  # "1,024.50" Kbyte
    assert launches[0].dram_write_bytes == pytest.approx(2_500_000)  # "2.50" Mbyte
    assert launches[0].duration_ms == pytest.approx(0.01225)  # "12.25" usecond
    assert launches[1].duration_ms == pytest.approx(0.0015)  # "1,500" nsecond
    assert launches[4].duration_ms == pytest.approx(0.002048)  # "2,048" ns
    # 5 launches in 2 calls: only the NVTX stack tells which kernel belongs to which call
    figures, why = ncu_output.figures_from_output(CONSTRUCTED.read_text(), 2, 1000.0, None)
    assert why == ""
    call_bytes = [1_024_500 + 2_500_000 + 512_000, 1_000_000 + 2_500_000 + 512_000 + 4_096 + 4]
    call_ms = [0.01225 + 0.0015, 0.01275 + 0.0015 + 0.002048]
    assert figures["calls"] == 2
    assert figures["kernels"] == [
        "scale_kernel(const float *, float *, int)",
        "partial_sum_kernel(const float *, float *, int)",
        "finish_sum_kernel(float *, int)",
    ]
    assert figures["duration_ms"] == pytest.approx(statistics.median(call_ms))
    assert figures["dram_read_bytes"] == (1_536_500 + 1_516_096) // 2
    assert figures["dram_write_bytes"] == 2_500_002
    rates = [b / (ms / 1e3) / 1e9 for b, ms in zip(call_bytes, call_ms)]
    assert figures["dram_bandwidth_gbs"] == pytest.approx(statistics.median(rates))
    assert figures["pct_peak_bandwidth"] == pytest.approx(statistics.median(rates) / 10)


@pytest.mark.parametrize("text", ["", "garbage\nmore garbage\n", "==WARNING== No kernels were profiled.\n"])
def test_no_table_means_null_and_a_note(text):
    figures, why = ncu_output.figures_from_output(text, 5, H100_PEAK_GBPS, None)
    assert figures is None
    assert why == "[profiler_agent] ncu: no kernel launch matched the NVTX range 'candidate' (nothing profiled)\n"


def _recorded_with(old: str, new: str) -> str:
    text = RECORDED_H100.read_text()
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("text, message", [
    (_recorded_with('"byte","4,200,448"', '"byte","lots"'), "not a number: 'lots'"),
    (_recorded_with('"byte","4,200,448"', '"KiB","4,200,448"'), "unknown unit 'KiB' for dram__bytes_read.sum"),
    (_recorded_with('"ns","6,144"', '"fortnight","6,144"'), "unknown unit 'fortnight' for gpu__time_duration.sum"),
    (_recorded_with('"ns","6,144"', '"ns"'), "wrong number of fields"),
    (_recorded_with('"Metric Value"', '"Value"'), "no column 'Metric Value'"),
])
def test_malformed_tables_are_null_with_the_reason(text, message):
    figures, why = ncu_output.figures_from_output(text, 4, H100_PEAK_GBPS, None)
    assert figures is None
    assert why.startswith("[profiler_agent] ncu: could not read ncu's output: ") and message in why


def test_a_metric_ncu_could_not_collect_stays_null():
    text = _recorded_with('"byte","0"', '"byte","n/a"')  # the first launch's write bytes
    figures, _ = ncu_output.figures_from_output(text, 4, H100_PEAK_GBPS, None)
    assert figures["dram_write_bytes"] is None and figures["dram_bandwidth_gbs"] is None
    assert figures["pct_peak_bandwidth"] is None
    assert figures["dram_read_bytes"] == 4200192  # the others are still known


def test_launches_that_do_not_split_into_calls_are_not_guessed():
    figures, why = ncu_output.figures_from_output(RECORDED_H100.read_text(), 3, H100_PEAK_GBPS, None)
    assert figures is None and "4 kernel launches do not split evenly into 3 calls" in why


def test_the_launch_cap_drops_the_call_it_may_have_cut_short():
    figures, _ = ncu_output.figures_from_output(CONSTRUCTED.read_text(), 2, None, None, launch_cap=5)
    assert figures["calls"] == 1 and figures["duration_ms"] == pytest.approx(0.01375)
    assert figures["pct_peak_bandwidth"] is None  # no known peak: null, not invented
    figures, why = ncu_output.figures_from_output(RECORDED_H100.read_text(), 4, None, None, launch_cap=4)
    assert figures is None and "launch cap (4)" in why


def test_the_command_profiles_only_the_candidate_range_with_the_clocks_left_alone(tmp_path):
    command = ncu_profiling.ncu_command("/opt/ncu", tmp_path / "out.csv", ["python", "-m", "target"], 5)
    text = " ".join(command)
    assert command[0] == "/opt/ncu" and command[-3:] == ["python", "-m", "target"]
    assert "--clock-control none" in text and "--csv" in command
    assert "--nvtx --nvtx-include candidate/" in text
    assert f"--log-file {tmp_path / 'out.csv'}" in text
    assert "--metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum" in text
    assert f"--launch-count {5 * ncu_output.MAX_KERNELS_PER_CALL}" in text


# --- the schema ---------------------------------------------------------------------------------------

def _passed_result(figures):
    result = result_schema.empty_result()
    result["status"], result["device"]["kind"], result["ncu"] = "passed", "cuda", figures
    return result


def test_the_schema_takes_ncu_figures_or_null_and_nothing_else():
    figures, _ = ncu_output.figures_from_output(RECORDED_H100.read_text(), 4, H100_PEAK_GBPS, None)
    result_schema.validate_result(_passed_result(figures))
    result_schema.validate_result(_passed_result(None))
    with pytest.raises(ValueError, match="ncu.calls: expected int, got str"):
        result_schema.validate_result(_passed_result({**figures, "calls": "4"}))
    with pytest.raises(ValueError, match=r"ncu: missing keys \[\], unknown keys \['sm_pct'\]"):
        result_schema.validate_result(_passed_result({**figures, "sm_pct": 1.0}))


# --- switches and the reasons ncu stays null ---------------------------------------------------------

def test_ncu_is_off_unless_asked_for_by_flag_or_environment(monkeypatch):
    monkeypatch.delenv("PROFILER_AGENT_NCU", raising=False)
    assert build_parser().parse_args(["judge", "b"]).ncu is False
    assert build_parser().parse_args(["judge", "b", "--ncu", "--ncu-timeout", "30"]).ncu_timeout == 30.0
    monkeypatch.setenv("PROFILER_AGENT_NCU", "1")
    assert build_parser().parse_args(["judge", "b"]).ncu is True
    assert build_parser().parse_args(["judge", "b", "--no-ncu"]).ncu is False
    work = build_parser().parse_args(["work", "--queue", "gpu.h100"])
    assert work.ncu is True


def test_a_job_inherits_the_agents_ncu_settings():
    config = AgentConfig(site="http://s", token="t", name="n", device="cuda", ncu=True, ncu_timeout_s=45.0)
    options = judge_options(config, {"timeout_s": 60})
    assert options.ncu is True and options.ncu_timeout_s == 45.0
    default = judge_options(AgentConfig(site="http://s", token="t", name="n", device="cuda"), {})
    assert default.ncu is False and default.ncu_timeout_s == ncu_output.DEFAULT_TIMEOUT_S


def _options(device="cuda"):
    return SimpleNamespace(device=device, ncu_timeout_s=30.0)


def test_without_ncu_on_path_the_result_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ncu anywhere
    result = _passed_result({"stale": True})
    ncu_profiling.add_to_result(result, locate_bundle(EXAMPLES / "relu-cpu"), _options(), tmp_path, tmp_path / "ncu")
    assert result["ncu"] is None
    assert result["logs"]["stderr"] == "[profiler_agent] ncu: not found on PATH; nothing profiled\n"
    assert not (tmp_path / "ncu").exists()  # nothing was started


def test_a_candidate_that_did_not_pass_is_not_profiled(tmp_path):
    result = _passed_result(None)
    result["status"] = "wrong_answer"
    ncu_profiling.add_to_result(result, locate_bundle(EXAMPLES / "relu-cpu"), _options(), tmp_path, tmp_path / "ncu")
    assert result["ncu"] is None
    assert result["logs"]["stderr"] == "[profiler_agent] ncu: skipped: the candidate did not pass (wrong_answer)\n"


def test_a_profiler_failure_never_escapes(monkeypatch, tmp_path):
    def explode(*args, **kwargs):
        raise OSError("ncu vanished")

    monkeypatch.setattr(ncu_profiling, "profile_candidate", explode)
    result = _passed_result(None)
    ncu_profiling.add_to_result(result, locate_bundle(EXAMPLES / "relu-cpu"), _options(), tmp_path, tmp_path / "ncu")
    assert result["status"] == "passed" and result["ncu"] is None
    assert result["logs"]["stderr"] == "[profiler_agent] ncu: failed: OSError: ncu vanished\n"


# --- a stand-in ncu: real processes, real sandbox, no GPU ---------------------------------------------

@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """Put the stand-in `ncu` (tests/agent/stand_in_ncu.py) first on PATH, checking the options `--ncu`'s
    figures pass; returns where a hanging one writes its child's pid."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    return lambda mode: stand_in_ncu.install(bin_dir, tmp_path / "sleeper.pid", monkeypatch, mode,
                                             RECORDED_H100.read_text(), stand_in_ncu.FIGURES_OPTIONS)


@pytest.fixture(scope="module")
def relu_cpu_judged_with_ncu(tmp_path_factory, shared_build_cache):
    """examples/relu-cpu judged on CPU with --ncu (builds its extension in the shared cache, once)."""
    folder = tmp_path_factory.mktemp("ncu-cpu")
    json_path = folder / "result.json"
    with pytest.MonkeyPatch.context() as patch:
        bin_dir = folder / "bin"
        bin_dir.mkdir()
        (bin_dir / "ncu").write_text("#!/bin/sh\necho 'the agent must not run ncu for a CPU judgement'; exit 3\n")
        (bin_dir / "ncu").chmod(0o755)
        patch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        code = main(["judge", str(EXAMPLES / "relu-cpu"), "--device", "cpu", "--cache-dir", shared_build_cache,
                     "--json", str(json_path), "--ncu", "--seed", "3"])
    assert code == 0
    return json.loads(json_path.read_text())


def test_ncu_on_a_cpu_judgement_is_null_with_a_note_and_the_verdict_stands(relu_cpu_judged_with_ncu):
    result = relu_cpu_judged_with_ncu
    result_schema.validate_result(result)
    assert result["status"] == "passed" and result["timing"]["candidate"]["median_ms"] > 0
    assert result["ncu"] is None
    assert result["logs"]["stderr"].endswith(
        "[profiler_agent] ncu: skipped: Nsight Compute profiles CUDA devices, this judgement ran on cpu\n"
    )


def _profile(tmp_path, shared_build_cache, bundle=EXAMPLES / "relu-cpu", timeout_s=120.0):
    # device "cpu": the profiled process runs the candidate without NVTX ranges (no CUDA here)
    return ncu_profiling.profile_candidate(
        locate_bundle(bundle), locate_bundle(bundle).candidate, "cpu", timeout_s, Path(shared_build_cache),
        tmp_path / "ncu", H100_PEAK_GBPS, calls=4,
    )


def test_the_profiled_process_runs_in_the_sandbox_from_the_build_cache(
        relu_cpu_judged_with_ncu, fake_ncu, tmp_path, shared_build_cache):
    fake_ncu("replay")
    figures, why = _profile(tmp_path, shared_build_cache)
    assert why == ""
    # the stand-in writes the recorded table only when the profiled process exited 0
    expected, _ = ncu_output.figures_from_output(RECORDED_H100.read_text(), 4, H100_PEAK_GBPS, None)
    assert figures == {**expected, "version": "Version 2025.3.0.0 (stand-in for tests)"}
    logs = tmp_path / "ncu" / "logs"
    assert "ncu_target: 4 calls after a warm-up" in (logs / "stderr.log").read_text()
    # ncu and its profiled process at the lowest priority: their start-up runs beside a judging's timing
    assert f"stand-in ncu: niceness {min(19, os.nice(0) + 19)}\n" in (logs / "stderr.log").read_text()
    assert "[1/2] c++" not in (logs / "stdout.log").read_text()  # the judgement's build, not a new one


def test_a_failing_profiled_process_gives_null_and_its_error(make_bundle, fake_ncu, tmp_path, shared_build_cache):
    fake_ncu("replay")
    bundle = make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                raise ValueError("the kernel exploded")
    ''')
    figures, why = _profile(tmp_path, shared_build_cache, bundle=bundle)
    assert figures is None
    assert why.startswith("[profiler_agent] ncu: ncu or the profiled process failed (exit code 1):")
    assert "ValueError: the kernel exploded" in why


def test_refused_counters_are_named(fake_ncu, tmp_path, shared_build_cache):
    fake_ncu("fail-permission")
    figures, why = _profile(tmp_path, shared_build_cache)
    assert figures is None
    assert "ERR_NVGPUCTRPERM" in why and "sandbox user" in why


def test_nothing_profiled_is_named(relu_cpu_judged_with_ncu, fake_ncu, tmp_path, shared_build_cache):
    fake_ncu("no-kernels")
    figures, why = _profile(tmp_path, shared_build_cache)
    assert figures is None and "no kernel launch matched the NVTX range 'candidate'" in why


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_a_timeout_kills_ncu_and_everything_it_started(fake_ncu, tmp_path, shared_build_cache):
    pid_file = fake_ncu("hang")
    started = time.monotonic()
    figures, why = _profile(tmp_path, shared_build_cache, timeout_s=3.0)
    assert time.monotonic() - started < 30
    assert figures is None
    assert why == "[profiler_agent] ncu: timed out after 3 s; ncu and the profiled process were killed\n"
    sleeper = int(pid_file.read_text())
    assert not _running(sleeper)


def test_the_stand_in_checks_its_arguments(tmp_path):
    """Guards the stand-in itself: an option real ncu would not get from us is refused."""
    path = tmp_path / "ncu"
    path.write_text(stand_in_ncu.script(table="", expected=stand_in_ncu.FIGURES_OPTIONS))
    path.chmod(0o755)
    import subprocess

    completed = subprocess.run([str(path), "--set", "full", "python"], capture_output=True, text=True)
    assert completed.returncode == 2 and "unrecognised option '--set'" in completed.stderr


def test_a_crashed_profiled_process_is_reported_in_whole_lines(tmp_path):
    """The reason keeps the end of the profiled process's output in whole lines: a reason cut mid-word
    (CUBLAS_STATUS_NOT_INI...) read as another error."""
    error = "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
    stderr = "\n".join([f"frame {i}: a long traceback line of the candidate's graph capture" for i in range(200)] + [error])
    run = SimpleNamespace(timed_out=False, exit_code=1, stdout="", stderr=stderr)
    profiled = ncu_profiling.interpret_run(run, tmp_path / "absent.log", 120, "ncu")
    assert profiled.output is None and profiled.why.rstrip().endswith(error)
    details = profiled.why.split("failed (exit code 1):\n", 1)[1].splitlines()
    assert details and all(line.startswith("frame ") or line == error for line in details)
    assert len("\n".join(details)) <= 2000
