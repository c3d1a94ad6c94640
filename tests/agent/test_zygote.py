"""The zygote (profiler_agent.sandbox.zygote): a `python -m` command run by the sandbox is a fork of
one process that imported torch once, and is otherwise the run's process as fork and exec made it."""

import os
import sys
import textwrap
from pathlib import Path

import pytest

from profiler_agent.sandbox import child_env, process, zygote
from profiler_agent.sandbox import limits as limits_module
from profiler_agent.sandbox import process_sweep

PROBE = textwrap.dedent('''
    import json, os, resource, sys
    def is_open(fd):
        try:
            os.fstat(fd)
            return True
        except OSError:
            return False
    preloaded = "torch" in sys.modules  # before this module imports anything heavy
    report = {
        "preloaded": preloaded, "argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": sys.stdin.read(),
        "token": os.environ.get("AGENT_TOKEN"), "own": os.environ.get("OWN"),
        "fds": [fd for fd in range(4096) if is_open(fd)],
        "cpu_limit": resource.getrlimit(resource.RLIMIT_CPU)[0],
        "niceness": os.nice(0),
        "session_leader": os.getsid(0) == os.getpid(),
        "dumpable": __import__("ctypes").CDLL(None).prctl(3, 0, 0, 0, 0),  # PR_GET_DUMPABLE
        "cmdline": open("/proc/self/cmdline", "rb").read().rstrip(b"\\0").decode().split("\\0"),
        "environ_has_marker": b"MARKER_ENV=" in open("/proc/self/environ", "rb").read(),
    }
    os.write(int(sys.argv[sys.argv.index("--result-fd") + 1]), json.dumps(report).encode())
    print("done", flush=True)
    sys.exit(7)
'''.replace("MARKER_ENV", process_sweep.MARKER_ENV))


def _run(tmp_path: Path, name: str, **kwargs) -> process.SandboxRun:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "probe.py").write_text(PROBE)
    env = child_env.child_env(folder, folder, None)
    env.update(OWN="run's own", PYTHONPATH=f"{folder}{os.pathsep}{env['PYTHONPATH']}")
    return process.run_sandboxed([sys.executable, "-m", "probe", "an argument"], cwd=folder, env=env,
                                 timeout_s=60, logs_dir=folder / "logs", stdin_data=b"its input",
                                 result_pipe=True, **kwargs)


def test_a_python_command_is_a_fork_of_the_zygote_and_the_runs_own_process(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("AGENT_TOKEN", "secret of the agent")  # never in the zygote's environment
    run = _run(tmp_path, "first", limits=process.Limits(cpu_s=77))
    assert run.exit_code == 7 and run.stdout == "done\n", run.stderr
    report = json.loads(run.report)
    assert report["preloaded"] is True  # torch came with the fork: no import of its own
    assert report["argv"] == ["an argument", "--result-fd", report["argv"][-1]]
    assert report["cwd"] == str(tmp_path / "first") and report["stdin"] == "its input"
    assert report["token"] is None and report["own"] == "run's own"
    # its files and nothing else: no end of the zygote's channel, no pipe of another run
    assert report["fds"] == [0, 1, 2, int(report["argv"][-1])]
    assert report["cpu_limit"] == 77 and report["session_leader"] is True
    assert report["niceness"] == os.nice(0)  # the agent's own: no Limits.niceness asked for
    # /proc shows it as the command it runs, with its run's marker (what the sweep looks for)
    assert report["cmdline"] == [sys.executable, "-m", "probe", *report["argv"]]
    assert report["environ_has_marker"] is True
    shared = zygote.shared()
    assert shared is not None and shared.alive() and shared.process.pid in process_sweep.live_runs()
    # the zygote makes itself undumpable (a fork of its uid must not ptrace it); its forks get back
    # the default an exec gives
    assert report["dumpable"] == 1
    second = _run(tmp_path, "second")
    assert second.exit_code == 7 and json.loads(second.report)["preloaded"] is True
    assert zygote.shared() is shared  # one per agent process


def test_off_it_is_fork_and_exec(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv(zygote.ZYGOTE_ENV, "0")
    run = _run(tmp_path, "plain")
    assert run.exit_code == 7
    report = json.loads(run.report)
    assert report["preloaded"] is False and report["cmdline"][2:4] == ["probe", "an argument"]


@pytest.mark.parametrize("zygote_on", ["1", "0"])
def test_a_run_started_with_a_niceness_yields_the_cpu_by_that_much(tmp_path, monkeypatch, zygote_on):
    """The profiler started ahead (judge.ncu_profiling) runs niced beside a judged process's timing."""
    import json

    monkeypatch.setenv(zygote.ZYGOTE_ENV, zygote_on)
    run = _run(tmp_path, "niced", limits=process.Limits(niceness=7))
    assert run.exit_code == 7, run.stderr
    assert json.loads(run.report)["niceness"] == min(19, os.nice(0) + 7)


def test_a_run_killed_on_timeout_ends_and_the_zygote_stays(tmp_path):
    folder = tmp_path / "sleeper"
    folder.mkdir()
    (folder / "sleeper.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(300)\n")
    env = child_env.child_env(folder, folder, None)
    env["PYTHONPATH"] = f"{folder}{os.pathsep}{env['PYTHONPATH']}"
    run = process.run_sandboxed([sys.executable, "-m", "sleeper"], cwd=folder, env=env, timeout_s=1.5,
                                logs_dir=folder / "logs")
    assert run.timed_out and run.stdout == "up\n"
    shared = zygote.shared()
    assert shared is not None and shared.alive()


@pytest.mark.parametrize("command", [["python3", "-m", "x"], [sys.executable, "x.py"], [sys.executable, "-c", "1"]])
def test_only_this_interpreters_module_commands_go_to_the_zygote(command):
    assert zygote.module_of(command) is None
    assert zygote.module_of([sys.executable, "-m", "mod", "a"]) == ("mod", ["a"])


def test_a_fork_of_a_zygote_whose_torch_started_openmp_threads_runs_parallel_work(tmp_path):
    """Without OMP_NUM_THREADS torch's import can leave an OpenMP thread in the zygote; a fork has
    only the forking thread, and must still run torch's parallel work (no hang, right result)."""
    folder = tmp_path / "omp"
    folder.mkdir()
    (folder / "parallel.py").write_text(textwrap.dedent('''
        import sys, torch
        torch.set_num_threads(2)
        a = torch.arange(1_000_000, dtype=torch.float64)
        sys.stdout.write(f"{float(a.sum())} {torch.get_num_threads()}\\n")
    '''))
    env = child_env.child_env(folder, folder, None)
    env.pop("OMP_NUM_THREADS", None)
    own = zygote.Zygote(env)
    try:
        out = open(folder / "out.txt", "wb")
        env["PYTHONPATH"] = f"{folder}{os.pathsep}{env['PYTHONPATH']}"
        limits = limits_module.limit_figures(process.Limits(), 60, None, None)
        fork = own.spawn("parallel", [], cwd=str(folder), env=env, fds={1: out.fileno(), 2: out.fileno()}, limits=limits)
        fork.stdin.close()
        assert fork.wait(timeout=60) == 0
        out.close()
        assert (folder / "out.txt").read_text() == f"{float(sum(range(1_000_000)))} 2\n"
    finally:
        own.process.kill()
        own.process.wait()


def test_a_forked_agent_starts_its_own_zygote(tmp_path):
    """RQ forks a work-horse per job: a horse must not share its parent's request channel."""
    import json

    parent = zygote.shared()
    assert parent is not None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the horse: a judging of its own, through a zygote of its own
        try:
            os.close(read_end)
            run = _run(tmp_path, "horse")
            own = zygote.shared()
            os.write(write_end, json.dumps({"exit": run.exit_code, "own": own.process.pid}).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    seen = json.loads(os.read(read_end, 4096))
    os.close(read_end)
    assert seen["exit"] == 7 and seen["own"] != parent.process.pid
    assert zygote.shared() is parent and parent.alive()  # the parent's own goes on
    assert _run(tmp_path, "after").exit_code == 7


def test_the_homes_of_ended_agents_are_removed_and_no_other(tmp_path):
    ended = subprocess_pid_that_ended()
    gone = tmp_path / f"{zygote.HOME_PREFIX}{ended}-abc123"
    (gone / ".cache").mkdir(parents=True)
    (gone / ".cache" / "torch").write_text("kept by the zygote's torch")
    running = tmp_path / f"{zygote.HOME_PREFIX}{os.getpid()}-def456"  # this process is alive
    unnamed = tmp_path / f"{zygote.HOME_PREFIX}k3j9x1q2"  # no pid in the name: not ours to judge
    for folder in (running, unnamed):
        folder.mkdir()
    assert zygote.remove_homes_of_ended_agents(tmp_path) == 1
    assert not gone.exists() and running.exists() and unnamed.exists()


def subprocess_pid_that_ended() -> int:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# A bundle judged in seconds: nothing to compile (the home's removal does not depend on a build).
PLAIN_TORCH_BUNDLE = {
    "torchcode.py": textwrap.dedent('''
        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)


        def get_inputs():
            return [torch.randn(256)]


        def get_init_inputs():
            return []
    '''),
    "cudacode.py": textwrap.dedent('''
        import torch


        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x.clamp_min(0)
    '''),
}
# `python -m profiler_agent judge ...`, which writes the zygote homes it sees just before it exits (after
# the judging, before the interpreter's exit handlers run) to the file named by the first argument.
JUDGE_AND_LIST_HOMES = textwrap.dedent('''
    import json, runpy, sys, tempfile
    from pathlib import Path
    seen, sys.argv = sys.argv[1], ["profiler_agent", *sys.argv[2:]]
    try:
        runpy.run_module("profiler_agent", run_name="__main__", alter_sys=True)
    finally:
        from profiler_agent.sandbox.zygote import HOME_PREFIX
        homes = sorted(p.name for p in Path(tempfile.gettempdir()).glob(HOME_PREFIX + "*"))
        Path(seen).write_text(json.dumps(homes))
''')


def test_a_judging_leaves_no_zygote_home_behind(tmp_path):
    """`python -m profiler_agent judge` (its zygote's home once stayed in /tmp after every judging): the
    judging made one, and it is gone once the process has exited."""
    import json
    import subprocess

    scratch, bundle = tmp_path / "tmp", tmp_path / "bundle"
    scratch.mkdir()
    bundle.mkdir()
    for name, text in PLAIN_TORCH_BUNDLE.items():
        (bundle / name).write_text(text)
    repo = Path(__file__).resolve().parents[2]
    completed = subprocess.run(
        [sys.executable, "-c", JUDGE_AND_LIST_HOMES, str(tmp_path / "seen.json"), "judge", str(bundle),
         "--device", "cpu", "--json", str(tmp_path / "result.json"), "--timing-budget", "0.2",
         "--cache-dir", str(tmp_path / "builds")],
        cwd=repo, env={**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(repo), zygote.ZYGOTE_ENV: "1"},
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert json.loads((tmp_path / "result.json").read_text())["status"] == "passed"
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert len(seen) == 1 and seen[0].startswith(zygote.HOME_PREFIX), seen  # the judging had its zygote
    assert not list(scratch.glob(f"{zygote.HOME_PREFIX}*"))
