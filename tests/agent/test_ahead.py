"""Processes started ahead of their turn (profiler_agent.judge.started_ahead): they wait for their input,
survive the sweep of runs that start and end after them, and end when cancelled."""
import os
import sys

from profiler_agent.judge.started_ahead import StartedAhead
from profiler_agent.sandbox import process_sweep
from profiler_agent.sandbox.process import run_sandboxed

ECHO = "import sys; data = sys.stdin.read(); print('got', data)"


def start_echo(tmp_path, name):
    return StartedAhead(lambda pending, on_started: run_sandboxed(
        [sys.executable, "-c", ECHO], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=30,
        logs_dir=tmp_path / name, stdin_data=pending, on_started=on_started))


def test_a_process_started_ahead_outlives_a_later_run_and_gets_its_input(tmp_path):
    waiting = start_echo(tmp_path, "ahead")
    later = run_sandboxed([sys.executable, "-c", "print('later')"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                          timeout_s=30, logs_dir=tmp_path / "later")
    assert later.stdout.strip() == "later"
    run = waiting.finish(b"the settings")
    assert run.exit_code == 0 and not run.cancelled
    assert run.stdout.strip() == "got the settings"


def test_a_cancelled_process_ends_without_input(tmp_path):
    # the children this test starts: a test process that ran other tests before may have others
    before = process_sweep.children_of(os.getpid())
    waiting = start_echo(tmp_path, "ahead")
    children = process_sweep.children_of(os.getpid()) - before
    assert children, "the process started ahead exists before its input comes"
    waiting.cancel()
    waiting.cancel()  # twice is harmless
    assert not (process_sweep.children_of(os.getpid()) & children)
