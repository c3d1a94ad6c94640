"""The confirmation's profiler started before its slot (judge.warm_pool.WarmPool.start_next_profiler):
it imports with its CUDA setup held back, makes it when given its turn at the GPU (at the refill), then
takes its job as a profiler started with its slot does; a job that comes before its turn finds it all
the same, its setup made with the job. On CPU, with the stand-in ncu (tests/agent/stand_in_ncu.py)."""

import time
from pathlib import Path

from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.judge import timing_confirmation
from profiler_agent.judge.judging import snapshot_sources
from profiler_agent.judge.options import JudgeOptions
from tests.agent.test_confirm import ATEN_RELU, _judged
from tests.agent.test_profiling_beside_verification import REPORT


def _confirmed_after(make_bundle, stand_in_ncu, tmp_path, cache, turn: bool):
    stand_in_ncu()
    bundle = locate_bundle(make_bundle(ATEN_RELU))
    options = JudgeOptions(device="cpu", ncu_timeout_s=60.0, timeout_s=60.0)
    scratch = tmp_path / "confirm"
    early = timing_confirmation.start_profiler(options, Path(cache), scratch, gpu_turn=True)
    time.sleep(0.2)  # started during another judging: its slot comes later
    started = timing_confirmation.start_processes(options, Path(cache), scratch, cuda_ahead=turn, profiler=early)
    assert started.profiler is early and started.outputs == scratch / "profile" / "exchange"
    time.sleep(0.3)  # the turn is written within 50 ms; the job comes after it
    judged_outputs = tmp_path / "judged-exchange"
    judged_outputs.mkdir()
    timing_confirmation.profile_beside_verification(started, bundle, REPORT, judged_outputs)
    return timing_confirmation.confirm_on_device(_judged(1.0, 1e-6), bundle, options, Path(cache), scratch,
                                                 snapshot_sources(bundle), started)


def test_a_profiler_given_its_turn_makes_its_setup_then_confirms_its_job(make_bundle, stand_in_ncu, tmp_path,
                                                                       shared_build_cache):
    outcome = _confirmed_after(make_bundle, stand_in_ncu, tmp_path, shared_build_cache, turn=True)
    assert outcome.wrong_answer == "" and outcome.confirmation["confirmed"] is True, outcome.confirmation["reason"]
    # its start-up says it waited for its turn, then made its context, before its job came
    assert "waiting for its turn " in outcome.cost and "CUDA context " in outcome.cost, outcome.cost


def test_a_profiler_whose_job_comes_before_its_turn_confirms_it_all_the_same(make_bundle, stand_in_ncu, tmp_path,
                                                                            shared_build_cache):
    outcome = _confirmed_after(make_bundle, stand_in_ncu, tmp_path, shared_build_cache, turn=False)
    assert outcome.wrong_answer == "" and outcome.confirmation["confirmed"] is True, outcome.confirmation["reason"]
    assert "waiting for its turn" not in outcome.cost and "calls after a warm-up" in outcome.cost, outcome.cost
