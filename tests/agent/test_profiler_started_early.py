"""The confirmation's profiler started before its slot (judge.warm_pool.WarmPool.start_next_profiler):
it imports with its CUDA setup held back; the pool's TurnKeeper gives it its turn at the GPU once it
waits for it, and a judging that takes the slot waits for that setup to end; a slot taken before the
turn finds its profiler all the same, its setup made with its job. On CPU, with the stand-in ncu
(tests/agent/stand_in_ncu.py)."""

import time
from pathlib import Path

from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.judge import timing_confirmation
from profiler_agent.judge.judging import snapshot_sources
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.judge import warm_pool
from profiler_agent.judge.warm_pool import TurnKeeper
from profiler_agent.sandbox.child_channel import TURN_DONE
from tests.agent.test_confirm import ATEN_RELU, _judged
from tests.agent.test_profiling_beside_verification import REPORT


def _slot_with_early_profiler(make_bundle, stand_in_ncu, tmp_path, cache):
    stand_in_ncu()
    bundle = locate_bundle(make_bundle(ATEN_RELU))
    options = JudgeOptions(device="cpu", ncu_timeout_s=60.0, timeout_s=60.0)
    scratch = tmp_path / "confirm"
    early = timing_confirmation.start_profiler(options, Path(cache), scratch, gpu_turn=True)
    started = timing_confirmation.start_processes(options, Path(cache), scratch, cuda_ahead=True, profiler=early)
    assert started.profiler is early and started.outputs == scratch / "profile" / "exchange"
    return options, bundle, started, TurnKeeper(early)


def _confirm(options, bundle, started, tmp_path, cache):
    judged_outputs = tmp_path / "judged-exchange"
    judged_outputs.mkdir()
    timing_confirmation.profile_beside_verification(started, bundle, REPORT, judged_outputs)
    return timing_confirmation.confirm_on_device(_judged(1.0, 1e-6), bundle, options, Path(cache),
                                                 tmp_path / "confirm", snapshot_sources(bundle), started)


def test_a_profiler_given_its_turn_makes_its_setup_before_the_slot_is_taken(make_bundle, stand_in_ncu, tmp_path,
                                                                          shared_build_cache):
    options, bundle, started, keeper = _slot_with_early_profiler(make_bundle, stand_in_ncu, tmp_path,
                                                                 shared_build_cache)
    deadline = time.monotonic() + 60
    while not keeper.given and time.monotonic() < deadline:  # given once its imports are done
        time.sleep(0.05)
    assert keeper.given
    keeper.take()  # a judging takes the slot: it waits for the setup to end
    assert started.profiler.said(TURN_DONE)
    outcome = _confirm(options, bundle, started, tmp_path, shared_build_cache)
    assert outcome.wrong_answer == "" and outcome.confirmation["confirmed"] is True, outcome.confirmation["reason"]
    # its start-up says it waited for its turn, then made its context, before its job came
    assert "waiting for its turn " in outcome.cost and "CUDA context " in outcome.cost, outcome.cost
    assert "before its job" in outcome.cost, outcome.cost


def test_a_slot_taken_before_its_profilers_turn_confirms_all_the_same(make_bundle, stand_in_ncu, tmp_path,
                                                                     shared_build_cache):
    options, bundle, started, keeper = _slot_with_early_profiler(make_bundle, stand_in_ncu, tmp_path,
                                                                 shared_build_cache)
    keeper.take()  # before its imports are done: no turn comes, nothing to wait for
    time.sleep(3.0)
    assert not keeper.given and not started.profiler.said(TURN_DONE)
    outcome = _confirm(options, bundle, started, tmp_path, shared_build_cache)
    assert outcome.wrong_answer == "" and outcome.confirmation["confirmed"] is True, outcome.confirmation["reason"]
    assert "waiting for its turn" not in outcome.cost and "calls after a warm-up" in outcome.cost, outcome.cost


def test_a_slot_that_confirms_nothing_ends_the_profiler_started_for_it(stand_in_ncu, shared_build_cache):
    stand_in_ncu()
    options = JudgeOptions(device="cpu", ncu_timeout_s=60.0, timeout_s=60.0)  # a CPU time is not confirmed
    root = warm_pool.new_root()
    profiler = timing_confirmation.start_profiler(options, Path(shared_build_cache), root / "confirm", gpu_turn=True)
    early = warm_pool.NextProfiler(root, warm_pool.slot_key(options, Path(shared_build_cache)), profiler)
    slot = warm_pool.start_slot(options, Path(shared_build_cache), cuda_ahead=True, early=early)
    try:
        assert slot.confirming is None and slot.turn is None and slot.root == root
        deadline = time.monotonic() + 30
        while profiler.process.waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not profiler.process.waiting()  # cancelled, not left waiting for a job that never comes
    finally:
        slot.close()
    assert not root.exists()
