"""What the sandbox user (the uid submission code runs as) can and cannot write while trusted
processes read: the judged process's outputs once it ended (privileges.take_back), a trusted
process's folder, its home and tmp (its own uid: privileges.trusted_user) and the reference's
pristine copy (judge.trusted_process). Submission code of that user runs beside them (the
confirmation's profiled process loads beside the verifier)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from profiler_agent.judge import trusted_process, warm_pool
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.process import run_sandboxed

USER = privileges.SandboxUser(privileges.DEFAULT_SANDBOX_UID, privileges.DEFAULT_SANDBOX_UID)
# CI's machine and the GPU hosts run the agent as root; elsewhere no uid is dropped and no folder is handed over
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="an agent that is not root has no sandbox user: "
                                "judged processes write as the agent itself")


@pytest.fixture
def reachable_root():
    """A folder under /tmp the sandbox user can pass through (pytest's own are the agent's alone)."""
    root = Path(tempfile.mkdtemp(prefix="sandbox-folders-"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root)


def as_sandbox_user(script: str, *args: str, user: privileges.SandboxUser = USER) -> list[str]:
    run = subprocess.run(["/bin/sh", "-c", script, "sh", *map(str, args)], capture_output=True, text=True,
                         preexec_fn=lambda: (os.setgid(user.gid), os.setuid(user.uid)))
    return run.stdout.split()


@needs_root
def test_the_judged_outputs_become_the_agents_read_only_and_links_go(reachable_root):
    folder = reachable_root / "exchange"
    (folder / "deeper").mkdir(parents=True)
    (folder / "trial-0.pt").write_bytes(b"output")
    writable_elsewhere = reachable_root / "elsewhere"
    writable_elsewhere.write_bytes(b"changeable")
    (folder / "trial-1.pt").symlink_to(writable_elsewhere)
    (folder / "deeper" / "linked").symlink_to(reachable_root)
    privileges.hand_over(folder, USER)
    privileges.take_back(folder, USER)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == ["deeper", "trial-0.pt"]
    # the sandbox user reads the output and can neither change it nor add one
    assert as_sandbox_user('cat "$1/trial-0.pt"; echo; (echo forged >> "$1/trial-0.pt") 2>/dev/null || echo refused; '
                           '(echo forged > "$1/new.pt") 2>/dev/null || echo refused', folder) == ["output", "refused", "refused"]
    assert (folder / "trial-0.pt").read_bytes() == b"output"


@needs_root
def test_a_trusted_process_folder_and_its_reference_are_out_of_the_sandbox_users_reach(reachable_root, monkeypatch):
    """A module planted beside the reference (sys.path's first entry in the trusted process) would be
    imported by it, a folder swapped for one of the sandbox user's would hold anything, and a JIT
    cache planted in its home would be the reference's code."""
    monkeypatch.setattr(privileges, "sandbox_user", lambda: USER)
    options = JudgeOptions(device="cpu", timeout_s=60.0)
    scratch = reachable_root / "verify"
    verifier = trusted_process.start_trusted("profiler_agent.graders.verifier", options, scratch, reachable_root / "exchange")
    # its folders are what is tested: the process ends first, so its run's sweep (which takes the
    # agent's children started meanwhile for its own) cannot end the shell below
    verifier.cancel()
    trusted_process.write_sources(verifier.pristine, {"torchcode.py": b"import numpy\n"})
    attempts = ('for path in "$1/reference/numpy.py" "$1/reference/torchcode.py" "$1/planted.py" "$1/home/cache"; do '
                '(echo forged >> "$path") 2>/dev/null && echo "wrote $path" || echo refused; done; '
                'mv "$1/reference" "$1/elsewhere" 2>/dev/null && echo moved || echo refused')
    assert as_sandbox_user(attempts, scratch) == ["refused"] * 5
    assert (scratch / "home").stat().st_uid == privileges.DEFAULT_TRUSTED_UID  # its own, not the sandbox user's
    assert (verifier.pristine / "torchcode.py").read_bytes() == b"import numpy\n"
    assert sorted(p.name for p in verifier.pristine.iterdir()) == ["torchcode.py"]


def test_the_trusted_processes_uid_is_neither_the_sandbox_users_nor_root(monkeypatch):
    monkeypatch.setattr(privileges, "sandbox_user", lambda: USER)
    monkeypatch.delenv(privileges.TRUSTED_UID_ENV, raising=False)
    assert privileges.trusted_user() == privileges.SandboxUser(65533, 65533)
    monkeypatch.setenv(privileges.TRUSTED_UID_ENV, "4242")
    assert privileges.trusted_user() == privileges.SandboxUser(4242, 4242)
    for same in (str(USER.uid), "0"):
        monkeypatch.setenv(privileges.TRUSTED_UID_ENV, same)
        with pytest.raises(ValueError, match="neither root nor the sandbox user's"):
            privileges.trusted_user()
    # judged code that runs as root (PROFILER_AGENT_SANDBOX_UID=0) has nothing to be kept apart from
    monkeypatch.setattr(privileges, "sandbox_user", lambda: privileges.SandboxUser(0, 0))
    assert privileges.trusted_user() == privileges.SandboxUser(0, 0)
    monkeypatch.setattr(privileges, "sandbox_user", lambda: None)
    assert privileges.trusted_user() is None


def test_what_a_sandboxed_process_writes_is_readable_by_others_whatever_the_agents_umask(tmp_path):
    # the trusted processes (another uid) read the judged process's outputs and builds
    before = os.umask(0o077)
    try:
        run = run_sandboxed([sys.executable, "-c", "import os; open('out', 'w').write('x'); os.mkdir('folder')"],
                            cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=30, logs_dir=tmp_path / "logs")
    finally:
        os.umask(before)
    assert run.exit_code == 0, run.stderr
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "folder").stat().st_mode & 0o777 == 0o755


@needs_root
def test_a_judged_processs_bundle_home_tmp_and_logs_are_closed_to_another_workers_sandbox_uid(reachable_root, monkeypatch):
    """Each worker on a host has its own sandbox uid; the bundle's path is in the judged process's
    /proc/<pid>/cmdline, which every uid reads."""
    monkeypatch.setattr(privileges, "sandbox_user", lambda: USER)
    judged = warm_pool.start_judged(JudgeOptions(device="cpu", timeout_s=60.0), reachable_root / "cache",
                                    reachable_root / "candidate")
    judged.cancel()  # its folders are what is tested (and its run's sweep would end the shells below)
    (judged.workdir / "cudacode.py").write_text("a contestant's kernel")
    privileges.hand_over(judged.scratch, USER)  # as the judging does when the job comes
    another_worker = privileges.SandboxUser(USER.uid + 1, USER.gid + 1)
    assert (judged.scratch / "logs" / "stderr.log").is_file()
    attempts = ('for path in bundle/cudacode.py home tmp logs/stderr.log; do (ls "$1/$path" >/dev/null 2>&1) && '
                'echo "read $path" || echo refused; done; ls "$1/exchange" >/dev/null 2>&1 && echo "read exchange"')
    assert as_sandbox_user(attempts, judged.scratch, user=another_worker) == ["refused"] * 4 + ["read", "exchange"]
    assert as_sandbox_user('cat "$1/bundle/cudacode.py"', judged.scratch) == ["a", "contestant's", "kernel"]
