"""The sandbox on its own, with small Python programs instead of bundles (no torch needed)."""

import os
import sys
import time

from profiler_agent.sandbox import run_sandboxed

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
    from profiler_agent.build_cache import exclusive

    build = tmp_path / "build"
    build.mkdir()
    (build / "lock").write_text("")  # torch's FileBaton would wait on this forever
    with exclusive(build):
        assert not (build / "lock").exists()


SCRUBBING_CHILD = r"""
import os
from profiler_agent.scrub import scrub_own_secrets
assert scrub_own_secrets()
print(os.environ["PROFILER_AGENT_TOKEN"])  # the agent itself still has it
# the needles are built here: this very code is part of the command line
print(open("/proc/self/environ", "rb").read().count(b"tok-" + b"123"), open("/proc/self/cmdline", "rb").read().count(b"tok-" + b"456"))
"""


def test_secrets_are_blanked_in_proc_environ_and_cmdline_but_kept_in_os_environ(tmp_path):
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-c", SCRUBBING_CHILD, "--token", "tok-456"],
        env={**os.environ, "PROFILER_AGENT_TOKEN": "tok-123"}, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["tok-123", "0", "0"]
