"""Running a trusted process of the harness (the verifier, the timing confirmation's check) on the
bundle's reference as it was before any submission code ran: its sources written fresh, sandboxed
all the same (it holds outputs submission code wrote), its JSON report read from the pipe."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from profiler_agent.harness import ahead
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, SandboxRun, run_sandboxed


def write_sources(directory: Path, sources: dict[str, bytes]) -> None:
    directory.mkdir(parents=True)
    for name, data in sources.items():
        (directory / name).write_bytes(data)


def parse_report(data: bytes | None) -> dict | None:
    if not data:
        return None
    try:
        # a NaN that slipped through becomes null: JSON has no NaN
        report = json.loads(data, parse_constant=lambda _: None)
    except (ValueError, UnicodeDecodeError):
        return None
    return report if isinstance(report, dict) else None


def start_trusted(module: str, bundle, options, scratch: Path, sources: dict[str, bytes],
                  outputs: Path) -> ahead.StartedAhead:
    """`python -m module --reference ... --outputs ... --device ...` on a pristine copy of the
    reference, started ahead of its turn (profiler_agent.harness.ahead): `finish_trusted` sends its
    settings and reads its report."""
    pristine = scratch / "reference"
    write_sources(pristine, sources)
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir()
    tmp.mkdir()
    user = privileges.sandbox_user()
    privileges.hand_over(scratch, user)
    command = [sys.executable, "-m", module,
               "--reference", str(pristine / bundle.reference.name),
               "--outputs", str(outputs),
               "--device", options.device]
    return ahead.StartedAhead(lambda pending, on_started: run_sandboxed(
        command,
        cwd=pristine,
        env=child_env(home, tmp, None),
        timeout_s=options.timeout_s,
        logs_dir=scratch / "logs",
        stdin_data=pending,
        result_pipe=True,
        user=user,
        # trusted code, but it holds the reference's and the candidate's outputs: the looser limit
        limits=Limits(memory_bytes=options.compile_memory_limit()),
        on_started=on_started,
    ))


def finish_trusted(process: ahead.StartedAhead, settings: dict) -> tuple[SandboxRun, dict | None]:
    run = process.finish(json.dumps(settings).encode())
    return run, parse_report(run.report)


def run_trusted(module: str, bundle, options, scratch: Path, sources: dict[str, bytes], outputs: Path,
                settings: dict) -> tuple[SandboxRun, dict | None]:
    """start_trusted and finish_trusted at once: the run and its report (None when it gave none)."""
    return finish_trusted(start_trusted(module, bundle, options, scratch, sources, outputs), settings)
