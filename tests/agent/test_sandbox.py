"""The sandbox on its own, with small Python programs instead of bundles (no torch needed)."""

import json
import os
import sys
import time

import pytest

from profiler_agent.sandbox.process import run_sandboxed

REPORTING_CHILD = r"""
import json, os, sys
fd = int(sys.argv[sys.argv.index("--result-fd") + 1])
settings = json.loads(sys.stdin.read())
print("printed on stdout", flush=True)
print("printed on stderr", file=sys.stderr, flush=True)
with os.fdopen(fd, "wb") as pipe:
    pipe.write(json.dumps({"got": settings, "env": sorted(os.environ)}).encode())
"""


def test_the_report_comes_over_the_pipe_and_prints_stay_in_the_logs(tmp_path):
    run = run_sandboxed(
        [sys.executable, "-c", REPORTING_CHILD],
        cwd=tmp_path, env={"PATH": os.environ["PATH"], "ONLY_THIS": "1"}, timeout_s=30,
        logs_dir=tmp_path / "logs", stdin_data=b'{"seed": 42}', result_pipe=True,
    )
    assert run.exit_code == 0 and not run.timed_out
    assert b'"got": {"seed": 42}' in run.report
    assert run.stdout == "printed on stdout\n" and run.stderr == "printed on stderr\n"
    assert b'"ONLY_THIS"' in run.report and b"PROFILER_AGENT" not in run.report


SPAWNING_CHILD = r"""
import subprocess, sys, time
grandchild = subprocess.Popen(["sleep", "300"])
open(sys.argv[1], "w").write(str(grandchild.pid))
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie is dead, just not yet reaped
    except FileNotFoundError:
        return False


def test_on_timeout_the_child_and_its_descendants_are_killed(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    run = run_sandboxed(
        [sys.executable, "-c", SPAWNING_CHILD, str(pid_file)],
        cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout_s=3,
        logs_dir=tmp_path / "logs", result_pipe=True,
    )
    assert run.timed_out and run.report is None and run.exit_code is None
    assert time.monotonic() - started < 20
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild)


def test_logs_are_capped_to_head_and_tail(tmp_path):
    program = "import sys\nsys.stdout.write('HEAD' + 'x' * 500000 + 'TAIL')"
    run = run_sandboxed([sys.executable, "-c", program], cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                        timeout_s=30, logs_dir=tmp_path / "logs")
    assert run.exit_code == 0 and run.report is None
    assert run.stdout.startswith("HEAD") and run.stdout.endswith("TAIL")
    assert "bytes omitted" in run.stdout and len(run.stdout) < 70 * 1024


def test_a_stale_torch_lock_left_by_a_killed_build_is_removed(tmp_path):
    from profiler_agent.executors.build_cache import exclusive

    build = tmp_path / "build"
    (build / "relu").mkdir(parents=True)
    # torch's FileBaton, in the extension's own folder (TORCH_EXTENSIONS_DIR/<name>/lock), would wait
    # on it forever: the chaos test's agents hung on one left by a killed judging
    (build / "relu" / "lock").write_text("")
    (build / "lock").write_text("")
    (build / "relu" / "relu.so").write_text("")
    with exclusive(build):
        assert not (build / "relu" / "lock").exists() and not (build / "lock").exists()
        assert (build / "relu" / "relu.so").exists()  # the build itself is kept


def test_builders_a_killed_agent_left_running_in_the_folder_are_ended_by_the_next_holder(tmp_path):
    """An agent killed with -9 mid-build: its judged process dies with it, but ninja and the compilers
    it started go on writing in the folder, whose lock is free. The next holder ends them first (a second
    ninja beside them corrupted the deps log in a CI run: every later judging built relu-cpu again)."""
    import pty
    import subprocess

    from profiler_agent.executors import orphaned_builds
    from profiler_agent.executors.build_cache import exclusive

    build, elsewhere = tmp_path / "build", tmp_path / "elsewhere"
    (build / "relu").mkdir(parents=True)
    elsewhere.mkdir()
    # like an orphaned ninja: no terminal (its own session), working in the extension's folder
    orphan = subprocess.Popen(["sleep", "120"], cwd=build / "relu", start_new_session=True)
    bystander = subprocess.Popen(["sleep", "120"], cwd=elsewhere, start_new_session=True)
    shell_pid, shell_fd = pty.fork()  # a person's shell in the folder: it has a terminal
    if shell_pid == 0:
        os.chdir(build)
        os.execvp("sleep", ["sleep", "120"])
    try:
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{shell_pid}/cwd") != os.path.realpath(build) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the forked shell has changed folder
        assert orphaned_builds.working_in(build) == [orphan.pid]
        with exclusive(build):
            assert orphan.poll() == -9 and orphaned_builds.working_in(build) == []
            assert bystander.poll() is None and os.waitpid(shell_pid, os.WNOHANG) == (0, 0)
    finally:
        for process in (orphan, bystander):
            process.kill()
            process.wait()
        os.kill(shell_pid, 9)
        os.waitpid(shell_pid, 0)
        os.close(shell_fd)


SCRUBBING_CHILD = r"""
import os
from profiler_agent.sandbox.secret_scrub import scrub_own_secrets
assert scrub_own_secrets()
print(os.environ["PROFILER_AGENT_TOKEN"])  # the agent itself still has it
# the needles are built here: this very code is part of the command line
print(open("/proc/self/environ", "rb").read().count(b"tok-" + b"123"), open("/proc/self/cmdline", "rb").read().count(b"tok-" + b"456"))
# no secret: a process this one starts must still read it (a blanked budget would be refused)
print(open("/proc/self/environ", "rb").read().count(b"PROFILER_AGENT_TIMING_BUDGET=0.3\0"))
"""


def test_secrets_are_blanked_in_proc_environ_and_cmdline_but_kept_in_os_environ(tmp_path):
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-c", SCRUBBING_CHILD, "--token", "tok-456"],
        env={**os.environ, "PROFILER_AGENT_TOKEN": "tok-123", "PROFILER_AGENT_TIMING_BUDGET": "0.3"},
        capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["tok-123", "0", "0", "1"]


# A child that plays the judged process's side of the phase protocol: "compiles" for COMPILE_S,
# sends the phase message (at every time in SEND_AT, counted from its start), then "runs" for RUN_S
# and reports. Submission code can write to the pipe too, hence the repeated and early messages.
PHASED_CHILD = r"""
import json, os, sys, time
from profiler_agent.sandbox.child_channel import PHASE_COMPILED
fd = int(sys.argv[sys.argv.index("--result-fd") + 1])
compile_s, run_s, send_at = float(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
started = time.monotonic()
for moment in send_at:
    time.sleep(max(0.0, started + moment - time.monotonic()))
    os.write(fd, PHASE_COMPILED)
time.sleep(max(0.0, started + compile_s - time.monotonic()))
time.sleep(run_s)
os.write(fd, json.dumps({"ran": True}).encode())
"""


def run_phased(tmp_path, compile_s, run_s, send_at, compile_limit, run_limit):
    from profiler_agent.sandbox.child_env import package_root

    return run_sandboxed(
        [sys.executable, "-c", PHASED_CHILD, str(compile_s), str(run_s), json.dumps(send_at)],
        cwd=tmp_path, env={"PATH": os.environ["PATH"], "PYTHONPATH": package_root()},
        timeout_s=run_limit, compile_timeout_s=compile_limit, logs_dir=tmp_path / "logs", result_pipe=True,
    )


def test_a_build_past_the_compile_limit_is_killed_in_the_compile_phase(tmp_path):
    run = run_phased(tmp_path, compile_s=60, run_s=0, send_at=[], compile_limit=2, run_limit=60)
    assert run.timed_out and run.phase == "compile" and run.limit_s == 2
    assert 2 <= run.wall_s < 10 and run.compile_s == pytest.approx(run.wall_s, abs=1)
    assert run.report is None


def test_after_the_phase_message_the_run_limit_applies_from_that_moment(tmp_path):
    # 1.5 s building then 2 s running: past one 2 s limit, within 2 s + 3 s
    run = run_phased(tmp_path, compile_s=1.5, run_s=2, send_at=[1.5], compile_limit=2, run_limit=3)
    assert not run.timed_out and run.exit_code == 0 and run.phase == "run"
    assert run.report == b'{"ran": true}'  # the phase message is cut from the report
    assert 1.4 <= run.compile_s < 2.5


def test_a_run_past_its_limit_times_out_in_the_run_phase(tmp_path):
    run = run_phased(tmp_path, compile_s=0, run_s=60, send_at=[0], compile_limit=30, run_limit=2)
    assert run.timed_out and run.phase == "run" and run.limit_s == 2
    assert 2 <= run.wall_s < 10  # the unused compile time is not added to the run's


def test_a_second_phase_message_does_not_restart_the_run_clock(tmp_path):
    # as submission code could send it: the first message at 0 s starts the 3 s run limit, the one at
    # 2 s changes nothing, so the run ends at about 3 s, not 5 s
    run = run_phased(tmp_path, compile_s=0, run_s=60, send_at=[0, 2], compile_limit=30, run_limit=3)
    assert run.timed_out and run.phase == "run"
    assert 3 <= run.wall_s < 4.5


def test_a_compile_limit_needs_the_result_pipe(tmp_path):
    with pytest.raises(ValueError, match="needs the result pipe"):
        run_sandboxed([sys.executable, "-c", "pass"], cwd=tmp_path, env={}, timeout_s=5, compile_timeout_s=5,
                      logs_dir=tmp_path / "logs")
