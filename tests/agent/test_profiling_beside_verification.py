"""The confirmation's profiler given its job while the verifier runs
(timing_confirmation.profile_beside_verification): it loads beside the verification and its
profiled calls wait for the gate; one not needed after all is killed. On CPU, with the stand-in ncu
(tests/agent/stand_in_ncu.py). What the sandbox user cannot touch meanwhile:
tests/agent/test_sandbox_folders.py."""

import re
import subprocess
import time
from pathlib import Path


from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.graders.profiled_target import WAITING_FOR_GATE, start_up_line
from profiler_agent.judge import timing_confirmation
from profiler_agent.judge.judging import snapshot_sources
from profiler_agent.judge.options import JudgeOptions
from tests.agent.test_confirm import ATEN_RELU, _judged

REPORT = {"timing": {"candidate": {"median_ms": 1.0}}}


def _given_its_job(make_bundle, stand_in_ncu, tmp_path, cache, ncu_timeout_s: float = 60.0):
    """A confirmation's processes started, the profiler given its job beside a verification, and
    loaded and warm: (options, bundle, started)."""
    stand_in_ncu()
    bundle = locate_bundle(make_bundle(ATEN_RELU))
    options = JudgeOptions(device="cpu", ncu_timeout_s=ncu_timeout_s, timeout_s=60.0)
    started = timing_confirmation.start_processes(options, Path(cache), tmp_path / "confirm")
    judged_outputs = tmp_path / "judged-exchange"
    judged_outputs.mkdir()
    timing_confirmation.profile_beside_verification(started, bundle, REPORT, judged_outputs)
    _wait_for_line(tmp_path / "confirm" / "profile" / "logs", WAITING_FOR_GATE)
    return options, bundle, started


def _wait_for_line(logs: Path, line: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(line in p.read_text(errors="replace") for p in logs.glob("*.log")):
            return
        time.sleep(0.05)
    raise AssertionError(f"no {line!r} in {logs} after {timeout_s} s")


def test_the_profiled_calls_wait_for_the_gate_and_are_confirmed_once_it_opens(make_bundle, stand_in_ncu, tmp_path,
                                                                             shared_build_cache):
    options, bundle, started = _given_its_job(make_bundle, stand_in_ncu, tmp_path, shared_build_cache)
    early = started.early
    assert early is not None and early.calls == timing_confirmation.CONFIRM_CALLS and not early.gate.exists()
    time.sleep(0.5)
    assert list(started.outputs.iterdir()) == []  # loaded and warm, no profiled call made
    outcome = timing_confirmation.confirm_on_device(_judged(1.0, 1e-6), bundle, options, Path(shared_build_cache),
                                                    tmp_path / "confirm", snapshot_sources(bundle), started)
    assert early.gate.exists()
    assert outcome.wrong_answer == "" and outcome.confirmation["confirmed"] is True, outcome.confirmation["reason"]
    assert sorted(p.name for p in started.outputs.iterdir()) == ["trial-0.pt", "trial-1.pt", "trial-2.pt"]
    assert "gate open at" in outcome.cost
    # given its job as soon as it was started, the job waited for its imports: the cost line says how long
    said = re.search(r"started (\d+\.\d\d) s before its job, ready after (\d+\.\d\d) s \(launch [\d.]+, torch [\d.]+, "
                     r"backward imports [\d.]+\): its job waited (\d+\.\d\d) s for it", outcome.cost)
    assert said, outcome.cost
    before, ready, waited = map(float, said.groups())
    # given within a fraction of its start-up (torch's import alone: 0.5 s on a warm page cache, seconds cold)
    assert before < 0.5 * ready and abs(ready - before - waited) <= 0.02


def test_the_start_up_line_says_whether_the_job_or_the_process_waited():
    phases = [("launch", 10.5), ("torch", 14.5), ("profiler warm-up", 16.0)]
    late = start_up_line({"started_at": 10.0, "given_at": 15.0}, phases)
    assert late == ("; started 5.00 s before its job, ready after 6.00 s (launch 0.50, torch 4.00, profiler warm-up 1.50): "
                    "its job waited 1.00 s for it")
    assert start_up_line({"started_at": 10.0, "given_at": 18.5}, phases).endswith(": ready 2.50 s before its job")
    assert start_up_line({"given_at": 18.5}, phases) == ""  # a job sent without them: nothing said


def test_the_wait_at_the_gate_is_not_counted_in_the_profilers_timeout(make_bundle, stand_in_ncu, tmp_path,
                                                                     shared_build_cache):
    # a verifier may run longer than ncu's timeout: the profiler's counts from the gate
    options, bundle, started = _given_its_job(make_bundle, stand_in_ncu, tmp_path, shared_build_cache, ncu_timeout_s=3.0)
    time.sleep(4.0)
    outcome = timing_confirmation.confirm_on_device(_judged(1.0, 1e-6), bundle, options, Path(shared_build_cache),
                                                    tmp_path / "confirm", snapshot_sources(bundle), started)
    assert outcome.confirmation["confirmed"] is True, outcome.confirmation["reason"]


def test_a_profiler_given_its_job_is_killed_when_the_verifier_finds_a_wrong_answer(make_bundle, stand_in_ncu, tmp_path,
                                                                                  shared_build_cache):
    options, bundle, started = _given_its_job(make_bundle, stand_in_ncu, tmp_path, shared_build_cache)
    result = _judged(1.0, 1.0)
    result["status"] = "wrong_answer"
    began = time.monotonic()
    timing_confirmation.add_to_result(result, bundle, options, Path(shared_build_cache), tmp_path / "confirm",
                                      snapshot_sources(bundle), started)
    assert time.monotonic() - began < 30  # killed, not left to its 60 s timeout
    assert result["timing"]["confirmation"] is None and not started.early.gate.exists()
    assert list(started.outputs.iterdir()) == []
    busy = subprocess.run(["pgrep", "-f", str(tmp_path / "confirm")], capture_output=True, text=True).stdout
    assert busy == ""  # neither ncu nor its profiled process is left
