"""The memory limit without a cgroup (profiler_agent.sandbox.memory_watchdog) and the phases it follows
(profiler_agent.sandbox.phase_limits), with small Python programs instead of bundles (no torch needed).
PROFILER_AGENT_CGROUP=off makes each test take the watchdog's path wherever it runs."""

import json
import os
import sys

import pytest

from profiler_agent.sandbox.child_channel import PHASE_COMPILED, send_phase
from profiler_agent.sandbox.child_env import package_root
from profiler_agent.sandbox.phase_limits import Clock, MessageSplitter
from profiler_agent.sandbox.process import Limits, run_sandboxed

MiB = 1024**2

# Plays the judged process: runs STEPS in order ("send MESSAGE", "hold MiB" in this process, "helper
# MiB" in a grandchild that setsid()s away, "sleep S"), then reports.
STEPPING_CHILD = r"""
import json, os, subprocess, sys, time
from profiler_agent.sandbox.child_channel import send_phase
fd = int(sys.argv[sys.argv.index("--result-fd") + 1])
held, helpers = [], []
for step in json.loads(sys.argv[1]):
    verb, value = step.split(" ", 1)
    if verb == "send":
        send_phase(fd, value)
    elif verb == "hold":
        held.append(b"x" * (int(value) << 20))  # touched: resident
    elif verb == "helper":
        code = f"import time; hoard = b'x' * ({int(value)} << 20); time.sleep(60)"
        helpers.append(subprocess.Popen([sys.executable, "-c", code], start_new_session=True))
    elif verb == "sleep":
        time.sleep(float(value))
os.write(fd, json.dumps({"ran": True}).encode())
"""


def run_steps(tmp_path, steps, limits, compile_limit=30.0, run_limit=30.0):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": package_root(), "PROFILER_AGENT_CGROUP": "off"}
    os.environ["PROFILER_AGENT_CGROUP"] = "off"  # read by the parent, which makes the cgroup
    try:
        return run_sandboxed(
            [sys.executable, "-c", STEPPING_CHILD, json.dumps(steps)],
            cwd=tmp_path, env=env, timeout_s=run_limit, compile_timeout_s=compile_limit,
            logs_dir=tmp_path / "logs", result_pipe=True, limits=limits,
        )
    finally:
        del os.environ["PROFILER_AGENT_CGROUP"]


@pytest.fixture(autouse=True)
def no_cgroup_cache():
    from profiler_agent.sandbox import cgroup

    saved = dict(cgroup._cache)
    cgroup._cache.clear()  # PROFILER_AGENT_CGROUP is read once per process: read it again
    yield
    cgroup._cache.clear()
    cgroup._cache.update(saved)


def test_memory_held_while_building_is_caught_under_the_compile_limit(tmp_path):
    run = run_steps(tmp_path, ["hold 600", "sleep 30"], Limits(memory_bytes=1024 * MiB, compile_memory_bytes=300 * MiB))
    assert run.memory_exceeded is not None and run.report is None and not run.timed_out
    assert run.memory_exceeded.limit_bytes == 300 * MiB and run.memory_exceeded.resident_bytes > 300 * MiB
    assert "(build phase)" in run.memory_exceeded.phase and run.phase == "compile"
    assert run.wall_s < 20


def test_after_compiled_the_run_limit_applies_and_the_phase_is_named(tmp_path):
    # 150 MiB then 250 MiB: fine while building (1 GiB), too much once the 200 MiB run limit applies.
    # The growth waits for the stage's message to be read, so the kill names the stage it was in.
    run = run_steps(tmp_path, ["hold 150", "send compiled", "send stage correctness", "sleep 0.5", "hold 100",
                               "sleep 30"],
                    Limits(memory_bytes=200 * MiB, compile_memory_bytes=1024 * MiB))
    assert run.memory_exceeded is not None and run.memory_exceeded.limit_bytes == 200 * MiB
    assert run.memory_exceeded.phase == "while running the correctness trials, in forward (run phase)"


def test_a_later_build_is_under_the_compile_limit_while_it_runs(tmp_path):
    steps = ["send compiled", "send stage build_models", "send build", "hold 400", "sleep 0.5"]
    survived = run_steps(tmp_path, [*steps, "send built", "sleep 30"], Limits(memory_bytes=200 * MiB, compile_memory_bytes=1024 * MiB))
    assert survived.memory_exceeded is not None  # still holding 400 MiB once the build is over
    assert survived.memory_exceeded.phase == "while constructing the models, in __init__ (run phase)"
    killed = run_steps(tmp_path, [*steps, "hold 800", "sleep 30"], Limits(memory_bytes=200 * MiB, compile_memory_bytes=1024 * MiB))
    assert killed.memory_exceeded is not None and killed.memory_exceeded.limit_bytes == 1024 * MiB
    assert killed.memory_exceeded.phase == "while building an extension, constructing the models, in __init__ (build phase)"
    assert killed.phase == "compile"


def test_the_tree_counts_processes_that_left_the_session(tmp_path):
    # two helpers of 300 MiB each, each under the 500 MiB limit alone, over it together
    run = run_steps(tmp_path, ["send compiled", "helper 300", "helper 300", "sleep 30"],
                    Limits(memory_bytes=500 * MiB, compile_memory_bytes=500 * MiB))
    assert run.memory_exceeded is not None and run.memory_exceeded.resident_bytes > 500 * MiB
    assert run.wall_s < 25


def test_within_the_limits_nothing_is_killed_and_the_peak_is_kept(tmp_path):
    run = run_steps(tmp_path, ["hold 100", "send compiled", "sleep 0.3"],
                    Limits(memory_bytes=1024 * MiB, compile_memory_bytes=1024 * MiB))
    assert run.memory_exceeded is None and run.report == b'{"ran": true}' and run.exit_code == 0
    assert run.memory_peak_bytes >= 100 * MiB


def test_an_unphased_run_is_watched_under_its_one_limit(tmp_path):
    program = "import time; hoard = b'x' * (400 << 20); time.sleep(30)"
    os.environ["PROFILER_AGENT_CGROUP"] = "off"
    try:
        run = run_sandboxed([sys.executable, "-c", program], cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                            timeout_s=30, logs_dir=tmp_path / "logs", limits=Limits(memory_bytes=200 * MiB))
    finally:
        del os.environ["PROFILER_AGENT_CGROUP"]
    assert run.memory_exceeded is not None and run.wall_s < 20
    assert run.memory_exceeded.phase == "while running" and run.phase is None


def test_phase_messages_split_across_reads_are_cut_from_the_report():
    splitter = MessageSplitter()
    stream = PHASE_COMPILED + b'{"a": ' + b"\x1estage timing\n" + b"1}"
    pieces = [stream[i:i + 3] for i in range(0, len(stream), 3)]
    data, messages = b"", []
    for piece in pieces:
        got, found = splitter.feed(piece)
        data, messages = data + got, messages + found
    assert data == b'{"a": 1}' and messages == ["compiled", "stage timing"]


def test_a_later_build_spends_the_compile_budget_and_pauses_the_run_clock():
    clock = Clock(started=100.0, run_s=10.0, compile_s=30.0)
    clock.on_message("compiled")
    clock.compiled_at = 120.0  # 20 s of the compile budget spent importing
    clock.on_message("build")
    clock.build_started = 125.0
    assert clock.in_compile_phase() and clock.deadline() == pytest.approx(135.0)  # 10 s of budget left
    clock.on_message("built")
    clock.later_builds_s, clock.build_started = 4.0, None
    assert not clock.in_compile_phase() and clock.deadline() == pytest.approx(134.0)  # 120 + 4 + 10
    assert clock.compile_used_s(now=200.0) == pytest.approx(24.0)
    assert clock.on_message("build") and clock.on_message("built")
    assert not clock.on_message("compiled")  # only the first counts
