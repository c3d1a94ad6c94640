"""On the CPU, the candidate's time as the agent sees it from outside (the GPU's counterpart is the
kernel record of profiler_agent.judge.timing_confirmation): a fresh sandboxed process
(profiler_agent.graders.demonstration_target) makes CALLS calls on values from a secret the agent
writes only when that process says it waits, and the agent's clock runs from writing the secret to
the process saying it is done, when the checksums of its outputs are taken (the outputs are made
again and saved after). The trusted check verifies that each saved output matches its checksum and
is right, and times the harness's own work in the stretch (making the values, a checksum), so that

    demonstrated per-call time = (the stretch - the harness's work) / calls

is time the candidate really took, on outputs it really made. A judged process that reported its
candidate faster than that by more than the tolerance is not believed.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from profiler_agent.executors import build_cache
from profiler_agent.graders.demonstration_target import DONE, WAITING
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, run_sandboxed
from profiler_agent.trials import output_exchange

# A stretch this long is well above the clock's and the pipe's latency; calls shorter than
# MIN_CALL_MS are not demonstrated (the harness's own work per call would be most of the stretch).
STRETCH_S = 0.3
MIN_CALL_MS = 1.0
MIN_CALLS, MAX_CALLS = 3, 8
# Past this share of the stretch, the harness's own work (timed in another process, on a host whose
# load changes) is too uncertain for what is left to bound the candidate: not confirmed, not flagged.
# A memory-bound call on the CPU costs about what making its values and a checksum cost (a C++ ReLU
# over 16 MiB: 42% of the stretch, and demonstrated at 13 ms against 2.75-6.96 ms reported in two
# judgings on a 2-core host); a 768x768 matmul: about 20%.
MAX_HARNESS_SHARE = 0.25


def calls_for(reported_ms: float) -> int:
    return max(MIN_CALLS, min(MAX_CALLS, math.ceil(STRETCH_S * 1000 / reported_ms)))


@dataclass
class Demonstration:
    calls: int
    secret: int
    outputs: Path  # the outputs, copied once the process is gone, and the checksums committed at DONE
    stretch_ms: float | None  # None: no stretch (why says why)
    why: str = ""


def demonstrate(bundle, candidate: Path, options, cache_dir: Path, scratch: Path, seed: int,
                calls: int) -> Demonstration:
    """Run the demonstration target on `candidate` (its build is the judged process's) and time its stretch."""
    workdir, home, tmp, exchange = scratch / "bundle", scratch / "home", scratch / "tmp", scratch / "exchange"
    values, copy = scratch / "values", scratch / "demonstrated"  # the agent's: the sandbox user reads, never writes
    for folder in (workdir, home, tmp, exchange, values):
        folder.mkdir(parents=True)
    shutil.copytree(bundle.root, workdir, dirs_exist_ok=True)
    user = privileges.sandbox_user()
    for folder in (workdir, home, tmp, exchange):
        privileges.hand_over(folder, user)
    values_file = values / "secret"
    secret = secrets.randbelow(2**62)
    marks: dict[str, float] = {}
    committed: list[int] = []  # the outputs' checksums as they stood at DONE

    def on_stage(stage: str) -> None:
        if stage == WAITING and "start" not in marks:
            written = values / f".{secrets.token_hex(8)}"
            written.write_text(str(secret))
            marks["start"] = time.monotonic()
            os.replace(written, values_file)
        elif stage == DONE and "start" in marks and "end" not in marks:
            marks["end"] = time.monotonic()
            committed.extend(output_exchange.read_checksums(exchange / output_exchange.CHECKSUMS))

    extensions = build_cache.extensions_dir(build_cache.reachable_cache_dir(cache_dir, user), candidate, "cpu")
    settings = {"seed": seed, "reference": bundle.reference.name, "candidate": candidate.name,
                "extensions_dir": str(extensions)}
    command = [sys.executable, "-m", "profiler_agent.graders.demonstration_target", "--bundle", str(workdir),
               "--calls", str(calls), "--outputs", str(exchange), "--values-file", str(values_file)]
    with build_cache.exclusive(extensions):
        privileges.hand_over(extensions, user)
        run = run_sandboxed(command, cwd=workdir, env=child_env(home, tmp, None, build_cache.pch_root(cache_dir)),
                            timeout_s=options.timeout_s, logs_dir=scratch / "logs", stdin_data=json.dumps(settings).encode(),
                            result_pipe=True, user=user, limits=Limits(memory_bytes=options.memory_limit_bytes),
                            on_stage=on_stage)
    if "end" not in marks:
        why = "timed out" if run.timed_out else f"ended (exit code {run.exit_code}) before it was done"
        return Demonstration(calls, secret, copy, None, f"the demonstration process {why}: {run.stderr[-500:]}")
    # the outputs (saved after DONE) out of the process's reach now it is gone, the checksums as committed
    shutil.copytree(exchange, copy, symlinks=True)
    (copy / output_exchange.CHECKSUMS).write_text("".join(f"{c}\n" for c in committed))
    return Demonstration(calls, secret, copy, (marks["end"] - marks["start"]) * 1000)
