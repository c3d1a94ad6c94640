"""The processes of a judging started before its job (judge.warm_pool): real sandboxed processes on CPU."""

import os
import signal
import time
from pathlib import Path

import pytest

from profiler_agent.bundles.bundle import open_bundle
from profiler_agent.judge import warm_pool
from profiler_agent.sandbox import child_channel
from profiler_agent.judge.judging import WARM_NOTE, judge_bundle, judge_candidate, snapshot_sources
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.sandbox.child_channel import file_name
from profiler_agent.sandbox import zygote
from tests.agent.conftest import EXAMPLES


@pytest.fixture
def build_cache(examples_build_cache) -> Path:
    return examples_build_cache  # examples/relu-cpu, judged here, is built there once a run


@pytest.fixture
def pool():
    yield warm_pool.POOL
    warm_pool.POOL.drop()


def judged_at(bundle: Path, tmp_path: Path, options: JudgeOptions) -> dict:
    folder = tmp_path / f"opened-{bundle.name}-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    return judge_bundle(open_bundle(bundle, folder), options)


def judged(bundle_name: str, tmp_path: Path, options: JudgeOptions) -> dict:
    return judged_at(EXAMPLES / bundle_name, tmp_path, options)


def waiting_children(module: str) -> list[int]:
    """This process's children running `python -m module` (sandboxed: their own sessions), or its
    zygote's (sandbox.zygote: the agent's forks of one torch import)."""
    parents = {os.getpid()} | ({zygote._zygote.process.pid} if zygote._zygote is not None else set())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent in parents and module.encode() in command:
            found.append(int(entry))
    return found


def test_job_after_job_each_judging_finds_its_processes_waiting(pool, build_cache, tmp_path):
    options = JudgeOptions(device="cpu", cache_dir=build_cache, keep_warm=True)
    first = judged("relu-cpu", tmp_path, options)
    assert first["status"] == "passed" and WARM_NOTE not in first["logs"]["stderr"]

    # between jobs: the next judging's processes wait, knowing nothing of it (no bundle in their folders)
    waiting = pool._slot
    assert waiting is not None and waiting.waiting()
    assert list(waiting.judged.workdir.iterdir()) == []
    assert list(waiting.verifier.pristine.iterdir()) == []
    assert len(waiting_children("profiler_agent.graders.judged_process")) == 1

    wrong = judged("relu-cpu-wrong", tmp_path, options)
    assert wrong["status"] == "wrong_answer" and WARM_NOTE in wrong["logs"]["stderr"]
    assert wrong["reason"].startswith("trial 0: output 0:")
    again = judged("relu-cpu", tmp_path, options)
    assert again["status"] == "passed" and WARM_NOTE in again["logs"]["stderr"]
    assert again["timing"]["speedup"] > 0 and again["correctness"]["trials"] >= 3
    assert not waiting.root.exists()  # a used slot's scratch folder is gone


def test_a_slot_started_with_other_limits_is_not_used(pool, build_cache, tmp_path):
    judged("relu-cpu", tmp_path, JudgeOptions(device="cpu", cache_dir=build_cache, keep_warm=True))
    stale = pool._slot
    other = judged("relu-cpu", tmp_path, JudgeOptions(device="cpu", cache_dir=build_cache, keep_warm=True,
                                                      compile_timeout_s=300.0))
    assert other["status"] == "passed" and WARM_NOTE not in other["logs"]["stderr"]
    assert not stale.root.exists() and not stale.waiting()


def kill_waiting_judged_process(slot: warm_pool.Slot) -> None:
    (child,) = waiting_children("profiler_agent.graders.judged_process")
    os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while slot.judged.process.waiting() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_slot_whose_process_died_while_waiting_is_replaced(pool, build_cache, tmp_path):
    options = JudgeOptions(device="cpu", cache_dir=build_cache, keep_warm=True)
    judged("relu-cpu", tmp_path, options)
    kill_waiting_judged_process(pool._slot)
    assert not pool._slot.waiting()
    result = judged("relu-cpu", tmp_path, options)
    assert result["status"] == "passed" and WARM_NOTE not in result["logs"]["stderr"]


def test_a_judged_process_that_ended_before_its_job_came_is_the_agents_fault(build_cache, tmp_path):
    """Ended after the pool looked and before its settings were sent: no verdict on the submission."""
    options = JudgeOptions(device="cpu", cache_dir=build_cache)
    slot = warm_pool.start_slot(options, build_cache)
    try:
        kill_waiting_judged_process(slot)
        bundle = open_bundle(EXAMPLES / "relu-cpu", tmp_path / "opened")
        judgement = judge_candidate(bundle, bundle.candidate, options, 7, build_cache, snapshot_sources(bundle),
                                    slot.judged, slot.verifier)
    finally:
        slot.close()
    assert judgement.status == "internal_error"
    assert "before any submission code ran" in judgement.reason


def test_without_keep_warm_nothing_is_left_waiting(pool, build_cache, tmp_path):
    result = judged("relu-cpu", tmp_path, JudgeOptions(device="cpu", cache_dir=build_cache))
    assert result["status"] == "passed"
    assert pool._slot is None and waiting_children("profiler_agent.graders.judged_process") == []


def flagged_cuda_ahead(modules: tuple[str, ...]) -> dict[str, bool]:
    """Whether each waiting process of `modules` was told to make its CUDA context before its job."""
    found = {}
    for module in modules:
        for pid in waiting_children(module):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found[module] = child_channel.CUDA_AHEAD.encode() in f.read().split(b"\0")
    return found


def test_only_the_pool_refilled_after_a_judging_makes_cuda_contexts_ahead(pool, build_cache, tmp_path):
    """Started for a job at once, a slot's processes may import beside the judged process's timing:
    no CUDA context before their turn. Refilled after a judging, the agent's GPU is idle until the
    next job: they make their contexts while they wait."""
    modules = ("profiler_agent.graders.judged_process", "profiler_agent.graders.verifier")
    options = JudgeOptions(device="cpu", cache_dir=build_cache, keep_warm=True)
    slot = warm_pool.start_slot(options, build_cache)
    try:
        assert flagged_cuda_ahead(modules) == {module: False for module in modules}
    finally:
        slot.close()
    assert judged("relu-cpu", tmp_path, options)["status"] == "passed"
    assert pool._slot is not None and pool._slot.waiting()
    assert flagged_cuda_ahead(modules) == {module: True for module in modules}


@pytest.mark.parametrize("name", ["../torchcode.py", "/etc/passwd", "", ".", None, 3])
def test_a_file_name_in_the_settings_is_a_plain_name(name):
    with pytest.raises(ValueError):
        file_name({"candidate": name}, "candidate")
    assert file_name({"candidate": "cudacode.py"}, "candidate") == "cudacode.py"


def test_the_fleet_hands_keep_warm_to_every_worker():
    from profiler_agent.__main__ import _shared_worker_args, build_parser

    warm = build_parser().parse_args(["fleet", "--queue", "gpu.h100", "--keep-warm"])
    cold = build_parser().parse_args(["fleet", "--queue", "gpu.h100"])
    assert "--keep-warm" in _shared_worker_args(warm)
    assert "--no-keep-warm" in _shared_worker_args(cold)
    work = build_parser().parse_args(["work", *_shared_worker_args(warm), "--name", "w"])
    assert work.keep_warm is True
