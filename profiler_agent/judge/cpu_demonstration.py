"""On the CPU, the candidate's time as the agent sees it from outside (the GPU's counterpart is the
kernel record of profiler_agent.judge.timing_confirmation): a fresh sandboxed process
(profiler_agent.graders.demonstration_target) makes CALLS calls on values from a secret the agent
writes only when that process says it waits, and the agent reads the CPU time of the run's processes
(profiler_agent.sandbox.run_cpu) just before writing the secret and when the process says it is done,
when the checksums of its outputs are taken (the outputs are made again and saved after). The trusted
check verifies that each saved output matches its checksum and is right, and measures the CPU time of
the harness's own work in the stretch (making the values, a checksum), so that

    demonstrated per-call time = the least wall time the stretch's work takes, less the harness's / calls

(run_cpu.CpuUse.wall_floor_ns: the busiest thread's time, or the total over the cores it may use) is
work the candidate really did on outputs it really made. CPU time is what a busy host does not
stretch: a wall clock around the stretch was (an honest ReLU demonstrated at 28 ms against 2.5 ms on
a loaded CI host).
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
from profiler_agent.graders.demonstration_target import DONE, WAITING, acknowledgement
from profiler_agent.sandbox import privileges, run_cpu
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
# Threads of an OpenMP pool that wait for work sleep instead of spinning: a spinning thread's time on
# a CPU is no work, and a busy host makes it long (a thread spins while its sibling waits for a
# core: a 768x768 matmul read 1.7x its quiet time so). Read by OpenMP when it loads: these processes
# start a fresh interpreter, not a fork of the zygote. The judged process keeps the host's defaults;
# here only CPU time is read, never the wall clock.
IDLE_THREADS_SLEEP = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}


def calls_for(reported_ms: float) -> int:
    return max(MIN_CALLS, min(MAX_CALLS, math.ceil(STRETCH_S * 1000 / reported_ms)))


@dataclass
class Demonstration:
    calls: int
    secret: int
    outputs: Path  # the outputs, copied once the process is gone, and the checksums committed at DONE
    stretch: run_cpu.CpuUse | None  # the CPU time of the stretch; None: no stretch (why says why)
    wall_ms: float | None = None  # the stretch on the agent's clock, for the log
    why: str = ""


def demonstrate(bundle, candidate: Path, options, cache_dir: Path, scratch: Path, seed: int,
                calls: int, case: str | None = None) -> Demonstration:
    """Run the demonstration target on `candidate` (its build is the judged process's) with the input case
    `case` (None: the judging's first) and time its stretch."""
    workdir, home, tmp, exchange = scratch / "bundle", scratch / "home", scratch / "tmp", scratch / "exchange"
    values, copy = scratch / "values", scratch / "demonstrated"  # the agent's: the sandbox user reads, never writes
    for folder in (workdir, home, tmp, exchange, values):
        folder.mkdir(parents=True)
    shutil.copytree(bundle.root, workdir, dirs_exist_ok=True)
    user = privileges.sandbox_user()
    for folder in (workdir, home, tmp, exchange):
        privileges.hand_over(folder, user)
    privileges.keep_private(user, workdir, home, tmp)
    values_file = values / "secret"
    secret = secrets.randbelow(2**62)
    marks: dict[str, float] = {}
    committed: list[int] = []  # the outputs' checksums as they stood at DONE

    def write(path: Path, text: str) -> None:  # whole, by a rename: the process polls for it
        written = values / f".{secrets.token_hex(8)}"
        written.write_text(text)
        os.replace(written, path)

    def on_stage(stage: str) -> None:  # the run's CPU time is read as the message arrives, before this
        if stage == WAITING and "start" not in marks:
            marks["start"] = time.monotonic()
            write(values_file, str(secret))
        elif stage == DONE and "start" in marks and "end" not in marks:
            marks["end"] = time.monotonic()
            committed.extend(output_exchange.read_checksums(exchange / output_exchange.CHECKSUMS))
            write(acknowledgement(values_file), "1")

    extensions = build_cache.extensions_dir(build_cache.reachable_cache_dir(cache_dir, user), candidate, "cpu")
    settings = {"seed": seed, "reference": bundle.reference.name, "candidate": candidate.name,
                "extensions_dir": str(extensions), "case": case}
    command = [sys.executable, "-m", "profiler_agent.graders.demonstration_target", "--bundle", str(workdir),
               "--calls", str(calls), "--outputs", str(exchange), "--values-file", str(values_file)]
    with build_cache.exclusive(extensions):
        privileges.hand_over(extensions, user)
        run = run_sandboxed(command, cwd=workdir,
                            env=child_env(home, tmp, None, build_cache.pch_root(cache_dir)) | IDLE_THREADS_SLEEP,
                            timeout_s=options.timeout_s, logs_dir=scratch / "logs", stdin_data=json.dumps(settings).encode(),
                            result_pipe=True, user=user, limits=Limits(memory_bytes=options.memory_limit_bytes),
                            on_stage=on_stage, cpu_at_stages=True, fresh_interpreter=True)
    if "end" not in marks or not {WAITING, DONE} <= run.stage_cpu.keys():
        why = "timed out" if run.timed_out else f"ended (exit code {run.exit_code}) before it was done"
        return Demonstration(calls, secret, copy, None, why=f"the demonstration process {why}: {run.stderr[-500:]}")
    # the outputs (saved after DONE) out of the process's reach now it is gone, the checksums as committed
    shutil.copytree(exchange, copy, symlinks=True)
    (copy / output_exchange.CHECKSUMS).write_text("".join(f"{c}\n" for c in committed))
    stretch = run_cpu.used_between(run.stage_cpu[WAITING], run.stage_cpu[DONE])
    if stretch.total_ns <= 0:
        return Demonstration(calls, secret, copy, None, why="no CPU time could be read for the demonstration process")
    return Demonstration(calls, secret, copy, stretch, (marks["end"] - marks["start"]) * 1000)
