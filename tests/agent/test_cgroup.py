"""cgroup v2 limits of judged processes (profiler_agent.sandbox.cgroup), and the fallback where none can be made.

Tests marked by `require_cgroup()` need what production needs (cgroup v2, the memory controller, a
writable own cgroup: root in a container with a writable /sys/fs/cgroup; the pids test needs the pids
controller too); elsewhere they are skipped, and the fallback tests below cover what the agent does
there. The mechanics test needs only a writable cgroup v2 and runs on hybrid hosts too; the probe's
logic is checked on a folder laid out like a cgroup, anywhere, in test_cgroup_probe.py.

The GPU host has no pytest: `python tests/agent/test_cgroup.py [--device cuda]` runs every test here
and prints PASS / FAIL / SKIP lines (exit code 1 on any FAIL).
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # run as a script, from any folder

from profiler_agent.sandbox import cgroup  # noqa: E402
from profiler_agent.sandbox.process import Limits, run_sandboxed  # noqa: E402
from tests.agent.processes import wait_gone  # noqa: E402

RELU_REFERENCE = REPO / "examples" / "relu-cpu" / "torchcode.py"
DEVICE = os.environ.get("PROFILER_AGENT_TEST_DEVICE", "cpu")  # script mode: --device


def production_cgroups() -> str | None:
    """None when judged processes get cgroups here, else why not."""
    try:
        cgroup.hierarchy()
        return None
    except cgroup.Unavailable as exc:
        return str(exc)


def require_cgroup(*controllers: str) -> None:
    """Skip unless judged processes get cgroups here, with `controllers` beyond memory enabled."""
    reason = production_cgroups()
    if reason is not None:
        raise unittest.SkipTest(f"no cgroup for judged processes here ({reason}); the fallback tests cover it")
    where = cgroup.hierarchy()
    missing = [c for c in controllers if c not in where.controllers]
    if missing:
        raise unittest.SkipTest(f"{where.base}: no {' or '.join(missing)} controller here "
                                f"(cgroup.controllers: {(where.base / 'cgroup.controllers').read_text().strip()})")


class cgroups_off:
    """PROFILER_AGENT_CGROUP=off for the block, as an operator would set it (the probe is cached)."""

    def __enter__(self):
        self.saved = os.environ.get(cgroup.SWITCH_ENV)
        os.environ[cgroup.SWITCH_ENV] = "off"
        cgroup._cache.clear()

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop(cgroup.SWITCH_ENV, None)
        else:
            os.environ[cgroup.SWITCH_ENV] = self.saved
        cgroup._cache.clear()


def _sandboxed(tmp_path: Path, program: str, *args: str, **kwargs):
    from profiler_agent.sandbox.child_env import package_root

    tmp_path.mkdir(parents=True, exist_ok=True)
    return run_sandboxed(
        [sys.executable, "-c", program, *args], cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": package_root()}, logs_dir=tmp_path / "logs", **kwargs,
    )


# --- the fallback: what happens where no cgroup can be made (here when switched off) ---------------

SHOW_CGROUP = "print(open('/proc/self/cgroup').read(), flush=True)"


def test_switched_off_the_run_stays_in_the_agents_cgroup_and_says_why(tmp_path):
    with cgroups_off():
        run = _sandboxed(tmp_path, SHOW_CGROUP, timeout_s=30, limits=Limits(memory_bytes=1 << 30))
    assert run.exit_code == 0 and run.cgroup is None
    assert run.no_cgroup == f"turned off by {cgroup.SWITCH_ENV}"
    assert run.stdout == open("/proc/self/cgroup").read() + "\n"  # not moved anywhere
    # no OOM killer; the peak is the parent's watchdog's, which held the limit instead
    assert run.oom_kills == 0 and run.memory_exceeded is None and 0 < run.memory_peak_bytes < 1 << 30


def _explained(result: dict) -> str:
    """What a failed assertion on a judge result prints: the status and the tail of logs.stderr."""
    return f"status {result['status']!r}; logs.stderr ends:\n{result['logs']['stderr'][-3000:]}"


def test_without_a_cgroup_the_result_names_the_watchdog_and_rlimit_as_on_cpu(tmp_path):
    bundle = make_bundle(tmp_path, HONEST)
    result = judge(tmp_path, bundle, "--device", "cpu", "--memory-limit", "3G",
                   env={cgroup.SWITCH_ENV: "off"})
    assert result["status"] == "passed", _explained(result)
    stderr = result["logs"]["stderr"]
    assert ("[profiler_agent] memory: the agent watched the resident memory of the process tree every 50 ms: "
            "4 GiB while compiling, 3 GiB after; peak ") in stderr, _explained(result)
    assert f"(no cgroup: turned off by {cgroup.SWITCH_ENV}); and RLIMIT_AS 3 GiB beyond what the build left mapped" \
        in stderr, _explained(result)
    assert "[profiler_agent] address space: RLIMIT_AS " in result["logs"]["stderr"], _explained(result)


# Like a CUDA build of torch, whose libraries map gigabytes of address space at import (on CPU too).
# Read-only and private: no memory is committed, only address space.
RESERVES_ADDRESS_SPACE = """
import mmap
import torch

reserved = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ)

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_without_a_cgroup_rlimit_as_counts_what_the_build_left_mapped(tmp_path):
    # with RLIMIT_AS on the total, 8 GiB mapped at import left no room under 3 GiB: numpy.random's
    # library then failed to map ("failed to map segment from shared object"), an internal_error
    bundle = make_bundle(tmp_path, RESERVES_ADDRESS_SPACE)
    result = judge(tmp_path, bundle, "--device", "cpu", "--memory-limit", "3G",
                   env={cgroup.SWITCH_ENV: "off"})
    assert result["status"] == "passed", _explained(result)
    line = next(x for x in result["logs"]["stderr"].splitlines() if "address space: RLIMIT_AS" in x)
    assert line.endswith("mapped after the build + the 3 GiB limit"), line


def test_here_the_probe_gives_a_reason_or_a_usable_hierarchy():
    reason = production_cgroups()
    if reason is None:
        where = cgroup.hierarchy()
        available = (where.base / "cgroup.controllers").read_text().split()
        enabled = (where.base / "cgroup.subtree_control").read_text().split()
        assert where.controllers[0] == "memory" and set(where.controllers) <= set(enabled)
        assert ("pids" in where.controllers) == ("pids" in available) == ("pids" not in where.missing)
        assert not (where.base / "cgroup.type").exists() or not cgroup._pids(where.base)  # no internal processes
    else:
        assert reason and ("controller" in reason or "cgroup" in reason or "turned off" in reason)
        # only memory is required: a missing pids controller is never the reason
        assert "controller" not in reason or "the memory controller not available" in reason, reason


# --- the mechanics, on any writable cgroup v2 (hybrid hosts included) --------------------------------

ESCAPER = r"""
import os, sys, time
if os.fork() == 0:
    os.setsid()  # out of the session: killpg no longer reaches it
    if os.fork() == 0:
        v2 = [line for line in open("/proc/self/cgroup").read().splitlines() if line.startswith("0::")]
        print(os.getpid(), *v2, flush=True)
        time.sleep(600)
    os._exit(0)
time.sleep(600)
"""

MECHANICS = r"""
import json, os, subprocess, sys
from pathlib import Path
from profiler_agent.sandbox import cgroup

test = Path(sys.argv[1])
cgroup._write(test / "cgroup.procs", "0")  # this process moves in: the agent's cgroup, for the test
stale = test / "judged-999999999-gone"  # left by an agent (pid beyond pid_max) that died mid-run
stale.mkdir()
sleeper = subprocess.Popen(["sleep", "600"], preexec_fn=lambda: cgroup.join(str(stale / "cgroup.procs")))
available = (test / "cgroup.controllers").read_text().split()
required = tuple(c for c in cgroup.REQUIRED_CONTROLLERS if c in available)  # none on a hybrid host
where = cgroup.hierarchy(required, cgroup.OPTIONAL_CONTROLLERS)
facts = {
    "base": str(where.base),
    "own": cgroup.own_cgroup(),
    "left_in_base": cgroup._pids(where.base),
    "stale_removed": not stale.exists(),
    "sleeper_exit": sleeper.wait(timeout=10),
    "enabled": (test / "cgroup.subtree_control").read_text().split(),
    "required": list(required),
    "available": available,
    "controllers": list(where.controllers),
}
judged = cgroup.JudgedCgroup.create(where, None, 16)
escaper = subprocess.Popen([sys.executable, "-c", sys.argv[2]], stdout=subprocess.PIPE, text=True,
                           preexec_fn=lambda: cgroup.join(judged.procs_file))
pid, view = escaper.stdout.readline().split(" ", 1)
facts["grandchild"], facts["grandchild_cgroup_view"] = int(pid), view.strip()
facts["populated_before"] = judged.populated()
judged.kill()
facts["populated_after"] = judged.populated()
facts["escaper_exit"] = escaper.wait(timeout=10)
facts["removed"] = judged.remove() and not judged.path.exists()
print(json.dumps(facts))
"""


def test_mechanics_vacate_enable_join_kill_remove_on_a_real_cgroup(tmp_path):
    mounted = cgroup.cgroup2_mount()
    own = cgroup.own_cgroup()
    if mounted is None or own is None or mounted[1] != "/" or os.environ.get(cgroup.SWITCH_ENV) == "off":
        raise unittest.SkipTest("no cgroup v2 hierarchy this test can use")
    start = mounted[0] / own.lstrip("/")
    test = start / f"profiler-agent-test-{secrets.token_hex(4)}"
    try:
        test.mkdir()
    except OSError as exc:
        raise unittest.SkipTest(f"cannot make a cgroup under {start}: {exc}")
    try:
        from profiler_agent.sandbox.child_env import package_root

        completed = subprocess.run(
            [sys.executable, "-c", MECHANICS, str(test), ESCAPER], capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": package_root()},
        )
        assert completed.returncode == 0, completed.stderr
        facts = json.loads(completed.stdout)
        # the agent moved itself into a leaf, so the base may enable controllers for its children
        assert facts["base"] == str(test) and facts["own"].endswith(f"/{test.name}/{cgroup.AGENT_LEAF}")
        assert facts["left_in_base"] == []
        assert set(facts["required"]) <= set(facts["controllers"]) <= set(facts["enabled"])
        assert ("pids" in facts["controllers"]) == ("pids" in facts["available"])  # optional: where there
        # a dead agent's cgroup: its processes killed, the folder removed
        assert facts["stale_removed"] and facts["sleeper_exit"] == -9
        # the judged process sees only its own cgroup namespace (the agent runs as root here)
        if os.geteuid() == 0:
            assert facts["grandchild_cgroup_view"] == "0::/"
        # a grandchild outside the session and the process group: cgroup.kill still ends it
        assert facts["populated_before"] and not facts["populated_after"]
        assert facts["escaper_exit"] == -9 and wait_gone([facts["grandchild"]]) == []
        assert facts["removed"]
    finally:
        for leftover in sorted(test.glob("**/"), key=lambda p: len(p.parts), reverse=True):
            cgroup.JudgedCgroup(leftover).kill()
            leftover.rmdir()


# --- production limits: memory.max in two phases, pids.max, kill, removal ----------------------------

HOLD_AND_REPORT = r"""
import os, sys, time
from profiler_agent.sandbox.child_channel import PHASE_COMPILED
fd = int(sys.argv[sys.argv.index("--result-fd") + 1])
held = b"x" * (int(sys.argv[1]) << 20)  # written, so resident: counted by memory.max
os.write(fd, PHASE_COMPILED)  # the "build" is done: the run limit applies from here
time.sleep(float(sys.argv[2]))
os.write(fd, b'{"survived": true}')
"""


def test_past_memory_max_the_oom_killer_ends_the_run_and_the_cgroup_is_removed(tmp_path):
    require_cgroup()
    run = _sandboxed(tmp_path, HOLD_AND_REPORT, "768", "0", timeout_s=60, result_pipe=True,
                     limits=Limits(memory_bytes=256 << 20))
    assert run.oom_kills >= 1 and run.exit_code == -9 and run.report is None
    assert run.cgroup is not None and not Path(run.cgroup).exists()


def test_the_compile_memory_limit_holds_until_the_phase_message_then_the_run_limit(tmp_path):
    require_cgroup()
    # 512 MiB fits the 1 GiB compile limit and the run's 1 GiB: it lives and reports
    roomy = _sandboxed(tmp_path / "a", HOLD_AND_REPORT, "512", "1", timeout_s=60, compile_timeout_s=60,
                       result_pipe=True, limits=Limits(memory_bytes=1 << 30, compile_memory_bytes=1 << 30))
    assert roomy.oom_kills == 0 and roomy.report == b'{"survived": true}'
    assert roomy.memory_peak_bytes is None or roomy.memory_peak_bytes >= 512 << 20
    # the same 512 MiB held past "compiled" under a 256 MiB run limit: the lowered memory.max ends it
    tight = _sandboxed(tmp_path / "b", HOLD_AND_REPORT, "512", "5", timeout_s=60, compile_timeout_s=60,
                       result_pipe=True, limits=Limits(memory_bytes=256 << 20, compile_memory_bytes=1 << 30))
    assert tight.oom_kills >= 1 and tight.report is None and tight.phase == "run"


FORKER = r"""
import os, time
children = []
try:
    while len(children) < 1000:
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        children.append(pid)
except OSError as exc:
    print("LIMITED", exc.errno, flush=True)
print("CHILDREN", *children, flush=True)
time.sleep(600)
"""


def test_pids_max_bounds_the_processes_of_a_run_and_all_are_gone_after(tmp_path):
    require_cgroup("pids")
    run = _sandboxed(tmp_path, FORKER, timeout_s=5, limits=Limits(extra_processes=40))
    assert run.timed_out and "LIMITED 11" in run.stdout  # EAGAIN from fork: pids.max reached
    children = [int(p) for p in run.stdout.split("CHILDREN", 1)[1].split()]
    assert 0 < len(children) < 40
    assert wait_gone(children) == []
    assert not Path(run.cgroup).exists()


# --- the judge, end to end (PROFILER_AGENT_TEST_DEVICE or --device picks cpu / cuda) ------------------

HONEST = """
import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

HOG_WHILE_IMPORTING = """
import torch

hog = b"x" * (1536 << 20)  # 1.5 GiB while "compiling", past the 1 GiB compile limit

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

HOG_WHILE_RUNNING = """
import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        hog = torch.ones(6 * 2**30, dtype=torch.uint8)  # 6 GiB of host memory, past the 2 GiB limit
        return torch.relu(x) + hog[-1]
"""


def make_bundle(tmp_path: Path, candidate: str, name: str = "bundle") -> Path:
    root = tmp_path / name
    root.mkdir()
    shutil.copy(RELU_REFERENCE, root / "torchcode.py")
    (root / "cudacode.py").write_text(textwrap.dedent(candidate))
    return root


def judge(tmp_path: Path, bundle: Path, *extra: str, env: dict | None = None) -> dict:
    """`python -m profiler_agent judge` as an operator runs it; the result JSON."""
    json_path = tmp_path / f"{bundle.name}-result.json"
    args = ["--device", DEVICE, *extra] if "--device" not in extra else list(extra)
    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "judge", str(bundle), "--cache-dir", str(tmp_path / "builds"),
         "--json", str(json_path), "--timing-budget", "0.2", *args],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})},
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(json_path.read_text())


def test_judged_under_memory_max_an_honest_candidate_passes_and_the_peak_is_logged(tmp_path):
    require_cgroup()
    result = judge(tmp_path, make_bundle(tmp_path, HONEST), "--memory-limit", "3G")
    assert result["status"] == "passed", _explained(result)
    assert "[profiler_agent] memory: cgroup v2 memory.max 4 GiB while compiling, 3 GiB after" in result["logs"]["stderr"]
    controllers = ("memory, pids" if "pids" in cgroup.hierarchy().controllers
                   else "memory (pids not available: RLIMIT_NPROC only)")
    assert f"; cgroup controllers: {controllers}" in result["logs"]["stderr"], _explained(result)


def test_a_candidate_past_the_compile_memory_limit_is_a_memory_limit(tmp_path):
    require_cgroup()
    result = judge(tmp_path, make_bundle(tmp_path, HOG_WHILE_IMPORTING),
                   "--memory-limit", "1G", "--compile-memory-limit", "1G")
    assert result["status"] == "memory_limit", _explained(result)
    assert "the OOM killer ended" in result["logs"]["stderr"]
    assert "memory limit 1 GiB exceeded while importing the candidate (build phase)" in result["logs"]["stderr"], \
        _explained(result)


def test_a_candidate_past_the_run_memory_limit_is_a_memory_limit(tmp_path):
    require_cgroup()
    result = judge(tmp_path, make_bundle(tmp_path, HOG_WHILE_RUNNING), "--memory-limit", "2G")
    assert result["status"] == "memory_limit", _explained(result)
    if DEVICE == "cuda":  # on CPU RLIMIT_AS may refuse the allocation first: memory_limit all the same
        assert "the OOM killer ended" in result["logs"]["stderr"]
    assert "memory limit 2 GiB exceeded while" in result["logs"]["stderr"], _explained(result)
    assert "(run phase)" in result["logs"]["stderr"], _explained(result)


def _main(argv: list[str]) -> int:
    """Run every test here without pytest; PASS / FAIL / SKIP per test."""
    global DEVICE
    if "--device" in argv:
        DEVICE = argv[argv.index("--device") + 1]
    print(f"cgroups for judged processes: {production_cgroups() or 'yes'}; device {DEVICE}", flush=True)
    failed = 0
    for name, test in list(globals().items()):
        if not name.startswith("test_") or not callable(test):
            continue
        tmp = Path(tempfile.mkdtemp(prefix="cgroup-test-"))
        os.chmod(tmp, 0o755)  # the sandbox uid passes through when the agent runs as root
        started = time.monotonic()
        try:
            test(tmp) if test.__code__.co_argcount else test()
            print(f"PASS {name} ({time.monotonic() - started:.1f} s)", flush=True)
        except unittest.SkipTest as exc:
            print(f"SKIP {name}: {exc}", flush=True)
        except BaseException:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
