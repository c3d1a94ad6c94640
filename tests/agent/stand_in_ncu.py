"""A stand-in for Nsight Compute's CLI (no GPU in CI): it runs the profiled process as ncu does and
writes a table recorded on an H100 as ncu's log; the fixture `stand_in_ncu` (tests/agent/conftest.py)
puts it first on PATH."""

import os
import sys
from pathlib import Path

from tests.agent.test_timing_bounds import RECORDED_3_CALLS

STAND_IN = '''#!{python}
"""A stand-in for Nsight Compute's CLI, for tests only (no GPU here): takes the options the timing
confirmation passes, runs the target as ncu does (stdin passed on), writes `table` (output recorded on
an H100) to --log-file. MODE: replay, hang."""
import subprocess, sys, time

MODE = {mode!r}
TABLE = {table!r}
PID_FILE = {pid_file!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("Version 2025.3.0.0 (stand-in for tests)")
    sys.exit(0)
VALUED = {{"--clock-control", "--cache-control", "--target-processes", "--log-file", "--metrics",
          "--nvtx-include", "--launch-count"}}
options, i = {{}}, 0
while i < len(args) and args[i].startswith("--"):
    if args[i] in ("--csv", "--nvtx"):
        options[args[i]], i = True, i + 1
    elif args[i] in VALUED:
        options[args[i]], i = args[i + 1], i + 2
    else:
        sys.exit("==ERROR== unrecognised option %s" % args[i])
expected = {{"--clock-control": "none", "--cache-control": "none", "--metrics": "gpu__time_duration.sum",
            "--nvtx-include": "candidate/", "--launch-count": "401"}}  # 400 for the calls, 1 warm-up
for key, value in expected.items():
    if options.get(key) != value:
        sys.exit("==ERROR== stand-in ncu: %s is %r, expected %r" % (key, options.get(key), value))
if "--seed" in args:
    sys.exit("==ERROR== stand-in ncu: the seed is on the command line, where anyone can read it")
if MODE == "hang":
    sleeper = subprocess.Popen(["sleep", "300"])
    open(PID_FILE, "w").write(str(sleeper.pid))
    time.sleep(300)
code = subprocess.run(args[i:]).returncode
if code == 0:
    open(options["--log-file"], "w").write(TABLE)
sys.exit(code)
'''



def install(bin_dir: Path, pid_file: Path, monkeypatch, mode: str = "replay", table: str = RECORDED_3_CALLS) -> Path:
    script = bin_dir / "ncu"
    script.write_text(STAND_IN.format(python=sys.executable, mode=mode, table=table, pid_file=str(pid_file)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return pid_file
