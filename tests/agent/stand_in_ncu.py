"""A stand-in for Nsight Compute's CLI, for tests only (real ncu cannot run without a GPU): it takes
the options the agent passes, checks those it is told to expect, runs the profiled command as ncu
does (stdin passed on) and writes a table ncu recorded on an H100 to --log-file. The fixture
`stand_in_ncu` (tests/agent/conftest.py) puts it first on PATH for the timing confirmation."""

import os
import sys
from pathlib import Path

from tests.agent.test_timing_bounds import RECORDED_3_CALLS

STAND_IN = '''#!{python}
"""A stand-in for Nsight Compute's CLI, for tests only. MODE: replay, fail-permission, hang, no-kernels."""
import subprocess, sys, time

MODE = {mode!r}
TABLE = {table!r}
PID_FILE = {pid_file!r}
EXPECTED = {expected!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler")
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
        print("==ERROR== unrecognised option '%s'" % args[i], file=sys.stderr)
        sys.exit(2)
for key, value in EXPECTED.items():
    if options.get(key) != value:
        print("==ERROR== stand-in ncu: %s is %r, expected %r" % (key, options.get(key), value), file=sys.stderr)
        sys.exit(2)
if "--seed" in args:
    print("==ERROR== stand-in ncu: the seed is on the command line, where anyone can read it", file=sys.stderr)
    sys.exit(2)
log = open(options["--log-file"], "w")
print("stand-in ncu: niceness %d" % __import__("os").nice(0), file=sys.stderr, flush=True)
if MODE == "hang":
    sleeper = subprocess.Popen(["sleep", "300"])
    open(PID_FILE, "w").write(str(sleeper.pid))
    time.sleep(300)
if MODE == "fail-permission":
    log.write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
              "Performance Counters on the target device 0.\\n")
    sys.exit(1)
code = subprocess.run(args[i:]).returncode
if MODE == "no-kernels":
    log.write("==WARNING== No kernels were profiled.\\n")
elif code == 0:
    log.write(TABLE)
sys.exit(code)
'''
# what the timing confirmation passes (judge.timing_confirmation.PROFILE): 400 launches for the calls, 1 warm-up
CONFIRMATION_OPTIONS = {"--clock-control": "none", "--cache-control": "none", "--metrics": "gpu__time_duration.sum",
                        "--nvtx-include": "candidate/", "--launch-count": "401"}
# what `--ncu`'s figures pass (judge.ncu_output.FIGURES)
FIGURES_OPTIONS = {"--clock-control": "none", "--csv": True, "--nvtx": True, "--nvtx-include": "candidate/",
                   "--metrics": "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"}


def script(mode: str = "replay", table: str = RECORDED_3_CALLS, pid_file: Path | str = "",
           expected: dict = CONFIRMATION_OPTIONS) -> str:
    return STAND_IN.format(python=sys.executable, mode=mode, table=table, pid_file=str(pid_file), expected=expected)


def install(bin_dir: Path, pid_file: Path, monkeypatch, mode: str = "replay", table: str = RECORDED_3_CALLS,
            expected: dict = CONFIRMATION_OPTIONS) -> Path:
    """The stand-in as `ncu` in `bin_dir`, first on PATH; returns where its "hang" mode writes its sleeper's pid."""
    path = bin_dir / "ncu"
    path.write_text(script(mode, table, pid_file, expected))
    path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return pid_file
