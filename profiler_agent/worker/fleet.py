"""`python -m profiler_agent fleet`: one `work` process per GPU of this host (or N CPU workers),
each pinned to its GPU by UUID and named `<agent>-gpu<index>` (`<agent>-cpu<i>`), restarted with
back-off when it dies; SIGTERM or SIGINT stops them all (each finishes its current job) and waits.

The supervisor never touches CUDA (it lists GPUs through NVML) and holds no job itself. Secrets
reach the workers through their environment, never their command line.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
POLL_S = 0.2


@dataclass
class WorkerSlot:
    """One worker the fleet keeps running."""

    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    failures: int = 0  # deaths in a row, each less than `stable_s` after its start
    next_start_at: float = 0.0
    finished: bool = False  # a burst worker that ended on its own
    exits: list[int] = field(default_factory=list)


def _die_with_parent() -> None:
    """A worker is stopped when the supervisor dies, however it dies (SIGKILL included)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Fleet:
    def __init__(self, slots: list[WorkerSlot], *, burst: bool = False, backoff_s: float = 1.0,
                 max_backoff_s: float = 60.0, stable_s: float = 60.0):
        self.slots = slots
        self.burst = burst
        self.backoff_s, self.max_backoff_s, self.stable_s = backoff_s, max_backoff_s, stable_s
        self._stop_signals = 0

    def _on_signal(self, signum, frame) -> None:
        self._stop_signals += 1
        if self._stop_signals > 1:  # asked again: workers stop now, their current jobs with them
            self._signal_all(signal.SIGTERM)

    def _start(self, slot: WorkerSlot) -> None:
        # A session of its own: a terminal's Ctrl-C reaches the supervisor alone, which asks each
        # worker once (RQ takes a second signal as "stop now, kill the job").
        slot.process = subprocess.Popen(slot.argv, env=slot.env, start_new_session=True, preexec_fn=_die_with_parent)
        slot.started_at = time.monotonic()
        log.info("fleet: started worker %s (pid %s)", slot.name, slot.process.pid)

    def _reap(self, slot: WorkerSlot, now: float) -> None:
        code = slot.process.returncode
        slot.exits.append(code)
        slot.process = None
        if self.burst and code == 0:
            slot.finished = True
            log.info("fleet: worker %s finished its burst", slot.name)
            return
        slot.failures = 1 if now - slot.started_at >= self.stable_s else slot.failures + 1
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (slot.failures - 1))
        slot.next_start_at = now + delay
        log.warning("fleet: worker %s exited with %s; restarting in %.1f s", slot.name, code, delay)

    def _signal_all(self, signum: int) -> None:
        for slot in self.slots:
            if slot.process is not None and slot.process.poll() is None:
                try:
                    slot.process.send_signal(signum)
                except ProcessLookupError:
                    pass

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        while not self._stop_signals and not all(slot.finished for slot in self.slots):
            now = time.monotonic()
            for slot in self.slots:
                if slot.finished:
                    continue
                if slot.process is None:
                    if now >= slot.next_start_at:
                        self._start(slot)
                elif slot.process.poll() is not None:
                    self._reap(slot, now)
            time.sleep(POLL_S)
        log.info("fleet: stopping %d worker(s)", sum(s.process is not None for s in self.slots))
        self._signal_all(signal.SIGTERM)
        for slot in self.slots:
            while slot.process is not None and slot.process.poll() is None:
                time.sleep(POLL_S)
        return 0


def worker_command(work_args: list[str], name: str, *, gpu_uuid: str | None) -> list[str]:
    """The `work` command of one worker: the shared options, its name, and its GPU (or the CPU)."""
    pinned = ["--gpu", gpu_uuid, "--device", "cuda"] if gpu_uuid else ["--device", "cpu"]
    return [sys.executable, "-m", "profiler_agent", "work", *work_args, "--name", name, *pinned]


def worker_env(secrets: dict[str, str], *, cpu: bool) -> dict[str, str]:
    env = {**os.environ, **{k: v for k, v in secrets.items() if v}}
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU worker's judged code sees no GPU
    return env


def slots_for(agent_name: str, work_args: list[str], secrets: dict[str, str], *, gpus=None,
              cpu_workers: int = 0) -> list[WorkerSlot]:
    """GPU workers for `gpus` (HostGpu list), or `cpu_workers` CPU workers."""
    if cpu_workers:
        return [WorkerSlot(name, worker_command(work_args, name, gpu_uuid=None), worker_env(secrets, cpu=True))
                for name in (f"{agent_name}-cpu{i}" for i in range(cpu_workers))]
    return [WorkerSlot(f"{agent_name}-gpu{gpu.index}",
                       worker_command(work_args, f"{agent_name}-gpu{gpu.index}", gpu_uuid=gpu.uuid),
                       worker_env(secrets, cpu=False)) for gpu in gpus]
