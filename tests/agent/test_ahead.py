"""Processes started ahead of their turn (profiler_agent.judge.started_ahead): they wait for their input,
survive the sweep of runs that start and end after them, and end when cancelled."""
import os
import subprocess
import sys
import time

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


SLEEPER = "import sys, time; sys.stdin.read(); print('started', flush=True); time.sleep(60)"


class Held:
    def __init__(self):
        self.entered = self.left = False

    def __enter__(self):
        self.entered = True

    def __exit__(self, *exc):
        self.left = True


def test_a_process_given_its_input_and_not_needed_is_killed_and_lets_go_of_what_it_held(tmp_path):
    sleeper = StartedAhead(lambda pending, on_started: run_sandboxed(
        [sys.executable, "-c", SLEEPER], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=60,
        logs_dir=tmp_path / "sleeper", stdin_data=pending, on_started=on_started))
    held = Held()
    sleeper.hold(held)
    sleeper.give(b"the settings")
    deadline = time.monotonic() + 30
    while "started" not in (tmp_path / "sleeper" / "stdout.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert held.entered and not held.left
    began = time.monotonic()
    sleeper.cancel()
    assert time.monotonic() - began < 20  # killed, not left to sleep out its 60 s
    assert held.left and not sleeper.waiting()


def test_what_a_first_backward_call_imports_is_imported_ahead():
    # the premise of child_channel.import_for_backward, on this torch: after it, the first
    # torch.autograd.grad with a given gradient imports nothing of its own
    program = ("import sys, torch\n"
               "from profiler_agent.sandbox.child_channel import import_for_backward\n"
               "import_for_backward(sys.argv[1])\n"
               "before = set(sys.modules)\n"
               "x = torch.randn(4, requires_grad=True)\n"
               "torch.autograd.grad([x * 2], [x], grad_outputs=[torch.ones(4)])\n"
               "print(sorted(set(sys.modules) - before))\n")
    ahead = subprocess.run([sys.executable, "-c", program, "cuda"], capture_output=True, text=True, check=True)
    assert ahead.stdout.strip() == "[]", ahead.stdout
    not_ahead = subprocess.run([sys.executable, "-c", program, "cpu"], capture_output=True, text=True, check=True)
    assert "sympy" in not_ahead.stdout  # on a CPU host nothing is imported ahead: the first call does it


def test_a_process_past_the_time_it_was_given_is_killed(tmp_path):
    sleeper = StartedAhead(lambda pending, on_started: run_sandboxed(
        [sys.executable, "-c", SLEEPER], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=60,
        logs_dir=tmp_path / "sleeper", stdin_data=pending, on_started=on_started))
    began = time.monotonic()
    run = sleeper.finish(b"the settings", timeout_s=1.0)
    assert sleeper.overran and time.monotonic() - began < 20 and run.exit_code != 0 and not run.timed_out
