"""Running a trusted process of the harness (the verifier, the timing confirmation's check) on the
bundle's reference as it was before any submission code ran: its sources written fresh, sandboxed
all the same (it holds outputs submission code wrote) as a uid of its own (privileges.trusted_user),
its JSON report read from the pipe."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from profiler_agent.judge import started_ahead
from profiler_agent.sandbox import child_channel
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, SandboxRun, run_sandboxed


def write_sources(directory: Path, sources: dict[str, bytes]) -> None:
    """The sources, readable by every uid (the trusted process runs as its own, unprivileged) and
    writable by the agent alone, as is their folder."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for name, data in sources.items():
        path = directory / name
        path.write_bytes(data)
        path.chmod(0o644)


def parse_report(data: bytes | None) -> dict | None:
    if not data:
        return None
    try:
        # a NaN that slipped through becomes null: JSON has no NaN
        report = json.loads(data, parse_constant=lambda _: None)
    except (ValueError, UnicodeDecodeError):
        return None
    return report if isinstance(report, dict) else None


@dataclass
class TrustedAhead:
    """A trusted process started ahead of its turn and of its job: its reference comes with
    `finish_trusted`, written into `pristine` (its cwd) just before its settings."""
    process: started_ahead.StartedAhead
    pristine: Path
    user: object

    def cancel(self) -> None:
        self.process.cancel()


def start_trusted(module: str, options, scratch: Path, outputs: Path, cuda_ahead: bool = False,
                  extra_env: dict[str, str] | None = None) -> TrustedAhead:
    """`python -m module --reference-dir ... --outputs ... --device ...`, started ahead of its turn
    (profiler_agent.judge.started_ahead): `finish_trusted` writes the reference, sends the settings and
    reads the report. `extra_env` is added to its environment (in a fresh interpreter then: the
    zygote's libraries read theirs when it started)."""
    pristine, home, tmp = scratch / "reference", scratch / "home", scratch / "tmp"
    for folder in (pristine, home, tmp):
        folder.mkdir(parents=True)
    # its own uid: submission code runs while it waits (and, for the verifier, beside it)
    user = privileges.trusted_user()
    # its home and tmp are its own; its scratch and the reference's folder stay the agent's, so nothing
    # can be put where the reference's imports look first, nor the folder swapped
    privileges.hand_over(home, user)
    privileges.hand_over(tmp, user)
    privileges.keep_private(user, home, tmp)
    privileges.traversable(scratch)
    command = [sys.executable, "-m", module,
               "--reference-dir", str(pristine),
               "--outputs", str(outputs),
               "--device", options.device,
               *([child_channel.CUDA_AHEAD] if cuda_ahead else [])]
    return TrustedAhead(started_ahead.StartedAhead(lambda pending, on_started: run_sandboxed(
        command,
        cwd=pristine,
        env=child_env(home, tmp, None) | (extra_env or {}),
        timeout_s=options.timeout_s,
        logs_dir=scratch / "logs",
        stdin_data=pending,
        result_pipe=True,
        user=user,
        # trusted code, but it holds the reference's and the candidate's outputs: the looser limit
        limits=Limits(memory_bytes=options.compile_memory_limit()),
        on_started=on_started,
        fresh_interpreter=bool(extra_env),
    )), pristine, user)


def finish_trusted(trusted: TrustedAhead, settings: dict, bundle, sources: dict[str, bytes]) -> tuple[SandboxRun, dict | None]:
    """The bundle's reference as it was before any submission code ran (`sources`) written fresh,
    then the settings sent; the run and its report (None when it gave none)."""
    write_sources(trusted.pristine, sources)
    run = trusted.process.finish(json.dumps({**settings, "reference": bundle.reference.name}).encode())
    return run, parse_report(run.report)
