"""The contestant's run_code.py (the bundle's self-test), run in the judged process's sandbox after
the judgement: informative only, never scored."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from profiler_agent.bundles.bundle import Bundle
from profiler_agent.executors import build_cache
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, run_sandboxed


def _fresh_dirs(scratch: Path, bundle: Bundle) -> tuple[Path, Path, Path]:
    """A private copy of the bundle (submission code may write to its cwd), an empty home, a tmp."""
    workdir, home, tmp = scratch / "bundle", scratch / "home", scratch / "tmp"
    shutil.copytree(bundle.root, workdir)
    home.mkdir()
    tmp.mkdir()
    return workdir, home, tmp


def run_self_test(bundle: Bundle, options: JudgeOptions, cache_dir: Path, scratch: Path) -> dict:
    """Run the contestant's run_code.py in the same sandbox: informative only, never scored."""
    scratch.mkdir(parents=True)
    workdir, home, tmp = _fresh_dirs(scratch, bundle)
    # the candidate's build folder: run_code.py usually imports the candidate, whose build is there
    user = privileges.sandbox_user()
    extensions = build_cache.extensions_dir(
        build_cache.reachable_cache_dir(cache_dir, user), bundle.candidate, options.device
    )
    with build_cache.exclusive(extensions):
        privileges.hand_over(scratch, user)
        privileges.keep_private(user, workdir, home, tmp)
        privileges.hand_over(extensions, user)
        run = run_sandboxed(
            # the judged process's build flags and headers: its build is found, not compiled again
            [sys.executable, "-m", "profiler_agent.graders.self_test", bundle.self_test.name],
            cwd=workdir,
            env=child_env(home, tmp, extensions, build_cache.pch_root(cache_dir)),
            # it may build the candidate and sends no phase message: both limits, together
            timeout_s=options.compile_timeout_s + options.timeout_s,
            logs_dir=scratch / "logs",
            merge_stderr=True,
            user=user,
            limits=Limits(memory_bytes=options.compile_memory_limit()),
        )
    output = run.stdout
    if run.timed_out:
        output += f"\n[profiler_agent] timed out after {options.compile_timeout_s + options.timeout_s:g} s\n"
    return {"exit_code": run.exit_code, "output": output}
