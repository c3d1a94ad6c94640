"""The processes of one judging, started before its job is known, and the pool that keeps a set ready.

A judging runs the judged process, the verifier and, on CUDA, the confirmation's profiler and check.
Each spends seconds importing torch, the judged one making its CUDA context too, before it does any
work (about 5 s of a 13 s warm judging on the H100 host). A Slot starts all of them in a fresh
scratch folder with command lines that name no job: the job (the bundle copied in, its file names,
the candidate's build folder, the secret seed) reaches each with its settings, at its turn.

`judge_bundle` always judges in a slot, started at once or taken from the WarmPool: an agent that
judges job after job (`work --keep-warm`, the benches) refills it when a judging ends, so a job
that comes a few seconds later finds its processes imported and waiting (one that comes at once
waits for the rest of their imports). Started by the pool, after a judging, they make their CUDA
contexts too; started for a job at once, not before their turn (the judged process may be timing
beside them). Waiting they do nothing and hold no job's data. A slot whose limits differ from the next job's, or with a
process that ended while waiting, is thrown away and a fresh one started; a run's sweep spares them
(sandbox.process_sweep.live_runs).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from profiler_agent.executors import build_cache
from profiler_agent.judge import ncu_profiling, started_ahead, trusted_process
from profiler_agent.sandbox import child_channel
from profiler_agent.judge import timing_confirmation
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.child_env import child_env
from profiler_agent.sandbox.process import Limits, run_sandboxed


class StageRelay:
    """The judged process's stage messages, passed to whichever judging it turned out to serve."""

    def __init__(self) -> None:
        self.listener: Callable[[str], None] | None = None

    def __call__(self, stage: str) -> None:
        if self.listener is not None:
            self.listener(stage)


@dataclass
class JudgedAhead:
    """The judged process (profiler_agent.graders.judged_process), started before its job: its scratch
    holds bundle/ (its cwd, empty until the job comes), home/, tmp/, exchange/ and logs/."""
    process: started_ahead.StartedAhead
    scratch: Path
    user: object
    stages: StageRelay

    @property
    def workdir(self) -> Path:
        return self.scratch / "bundle"

    @property
    def outputs(self) -> Path:
        return self.scratch / "exchange"

    @property
    def compile_log(self) -> Path:
        return self.scratch / "compile.log"

    def cancel(self) -> None:
        self.process.cancel()


def start_judged(options, cache_dir: Path, scratch: Path, cuda_ahead: bool = False) -> JudgedAhead:
    scratch.mkdir(parents=True)
    for name in ("bundle", "home", "tmp", "exchange"):
        (scratch / name).mkdir()
    user = privileges.sandbox_user()
    privileges.hand_over(scratch, user)
    privileges.keep_private(user, scratch / "bundle", scratch / "home", scratch / "tmp")  # not exchange: the verifier's
    stages = StageRelay()
    command = [
        sys.executable, "-m", "profiler_agent.graders.judged_process",
        "--bundle", str(scratch / "bundle"),
        "--device", options.device,
        "--compile-log", str(scratch / "compile.log"),
        "--outputs", str(scratch / "exchange"),
        *([child_channel.CUDA_AHEAD] if cuda_ahead else []),
    ]
    process = started_ahead.StartedAhead(lambda pending, on_started: run_sandboxed(
        command,
        cwd=scratch / "bundle",
        # the build folder is the candidate's, named with the settings (child_channel.take_job)
        env=child_env(scratch / "home", scratch / "tmp", None, build_cache.pch_root(cache_dir)),
        timeout_s=options.timeout_s,
        logs_dir=scratch / "logs",
        stdin_data=pending,
        result_pipe=True,
        user=user,
        compile_timeout_s=options.compile_timeout_s,
        limits=Limits(memory_bytes=options.memory_limit_bytes, compile_memory_bytes=options.compile_memory_limit()),
        on_started=on_started,
        on_stage=stages,
    ))
    return JudgedAhead(process, scratch, user, stages)


def verifier_scratch(scratch: Path) -> Path:
    # a sibling: the judged process owns everything under `scratch`
    return scratch.with_name(scratch.name + "-verify")


def start_verifier(options, scratch: Path, cuda_ahead: bool = False) -> trusted_process.TrustedAhead:
    """The verifier of the candidate judged in `scratch` (start_judged)."""
    return trusted_process.start_trusted("profiler_agent.graders.verifier", options, verifier_scratch(scratch),
                                 scratch / "exchange", cuda_ahead)


def start_pair(options, cache_dir: Path, scratch: Path,
               cuda_ahead: bool = False) -> tuple[JudgedAhead, trusted_process.TrustedAhead]:
    """A judged process and its verifier, the verifier first (it ends last: judge.started_ahead)."""
    verifier = start_verifier(options, scratch, cuda_ahead)
    try:
        return start_judged(options, cache_dir, scratch, cuda_ahead), verifier
    except BaseException:
        verifier.cancel()
        raise


def slot_key(options, cache_dir: Path) -> tuple:
    """What a slot's processes were started with: a job with other values needs other processes."""
    return (options.device, options.timeout_s, options.compile_timeout_s, options.memory_limit_bytes,
            options.compile_memory_limit(), options.ncu_timeout_s, str(cache_dir), shutil.which("ncu"))


class TurnKeeper:
    """Gives a profiler started with its CUDA setup held back (WarmPool.start_next_profiler) its turn
    at the GPU as soon as it waits for it (its imports done), unless a judging has taken its slot by
    then: it then makes that setup with its job. A judging that takes the slot after the turn was
    given first waits for the setup to end, so none of it runs beside the judging's timing."""

    POLL_S = 0.02
    WAIT_S = 300.0  # for its imports; past that the setup comes with its job

    def __init__(self, profiler) -> None:
        self.profiler = profiler
        self.given = False
        self._taken = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._give_when_waiting, name="gpu-turn", daemon=True)
        self._thread.start()

    def _give_when_waiting(self) -> None:
        deadline = time.monotonic() + self.WAIT_S
        while time.monotonic() < deadline and self.profiler.process.waiting():
            with self._lock:
                if self._taken:
                    return
                if self.profiler.said(child_channel.WAITING_FOR_TURN):
                    self.profiler.give_turn()
                    self.given = True
                    return
            time.sleep(self.POLL_S)

    def take(self, timeout_s: float = 30.0) -> None:
        """No turn from now on; a setup under way is waited for (at most `timeout_s`)."""
        with self._lock:
            self._taken = True
        deadline = time.monotonic() + timeout_s
        while (self.given and not self.profiler.said(child_channel.TURN_DONE) and self.profiler.process.waiting()
               and time.monotonic() < deadline):
            time.sleep(self.POLL_S)


@dataclass
class Slot:
    root: Path
    key: tuple
    judged: JudgedAhead
    verifier: trusted_process.TrustedAhead
    confirming: timing_confirmation.Started | None
    warm: bool = False  # taken from the pool: started before its job arrived
    turn: TurnKeeper | None = None  # its profiler's turn at the GPU, when it was started before the slot
    _closed: bool = field(default=False, repr=False)

    @property
    def candidate_scratch(self) -> Path:
        return self.judged.scratch

    def processes(self) -> tuple:
        return (self.judged, self.verifier, *(self.confirming.processes() if self.confirming else ()))

    def waiting(self) -> bool:
        """Every process still waits for its settings (none ended, none was used)."""
        return all(getattr(p, "process", p).waiting() for p in self.processes())

    def close(self) -> None:
        """Whatever was not used ends; the scratch folder goes."""
        if self._closed:
            return
        self._closed = True
        if self.turn is not None:
            self.turn.take(timeout_s=0)  # no turn for a profiler about to end
        started_ahead.cancel_all(*self.processes())
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class NextProfiler:
    """The next slot's confirmation profiler, started during a judging (WarmPool.start_next_profiler)
    in the next slot's root: its imports overlap the judging's confirmation; its CUDA setup waits for
    its turn, given at the refill."""
    root: Path
    key: tuple
    profiler: ncu_profiling.ProfilerAhead

    def close(self) -> None:
        self.profiler.process.cancel()
        shutil.rmtree(self.root, ignore_errors=True)


def new_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="profiler-agent-"))
    privileges.traversable(root)  # the sandbox user reaches its own folders inside
    return root


def start_slot(options, cache_dir: Path, cuda_ahead: bool = False, early: NextProfiler | None = None) -> Slot:
    """Every process of a judging, started now in a fresh scratch folder: the confirmation's (CUDA),
    then the verifier, then the judged process (the one that ends last first: judge.started_ahead).
    `cuda_ahead`: each makes its CUDA context before it waits (only where nothing else runs on this
    GPU meanwhile: a pool refilled after a judging). `early`: the confirmation's profiler, started
    before (its root becomes the slot's)."""
    root = early.root if early is not None else new_root()
    confirming = None
    try:
        confirming = timing_confirmation.start_ahead(options, cache_dir, root / "confirm", cuda_ahead,
                                                     early.profiler if early is not None else None)
        if confirming is None and early is not None:  # no confirmation on this device: not needed after all
            early.profiler.process.cancel()
            early = None
        judged, verifier = start_pair(options, cache_dir, root / "candidate", cuda_ahead)
    except BaseException:
        started_ahead.cancel_all(*(confirming.processes() if confirming else ()))
        if early is not None:
            early.profiler.process.cancel()
        shutil.rmtree(root, ignore_errors=True)
        raise
    turn = TurnKeeper(early.profiler) if early is not None and cuda_ahead else None
    return Slot(root, slot_key(options, cache_dir), judged, verifier, confirming, turn=turn)


class WarmPool:
    """At most one slot, started after a judging for the next one; on CUDA, its confirmation's
    profiler is started earlier, during the judging (start_next_profiler): the only process of a slot
    that is not a fork of the zygote, it imports torch under ncu (4-5 s on the H200 host), and
    started at the refill it was still importing when a job that came 5 s later reached it."""

    def __init__(self) -> None:
        self._slot: Slot | None = None
        self._next: NextProfiler | None = None
        self._lock = threading.Lock()

    def take(self, options, cache_dir: Path) -> Slot:
        """The waiting slot when it fits this judging, else a fresh one."""
        with self._lock:
            slot, self._slot = self._slot, None
        if slot is not None and slot.key == slot_key(options, cache_dir) and slot.waiting():
            slot.warm = True
            if slot.turn is not None:
                slot.turn.take()
            return slot
        if slot is not None:
            slot.close()
        return start_slot(options, cache_dir)

    def start_next_profiler(self, options, cache_dir: Path) -> None:
        """During a judging whose judged process has ended: the next slot's profiler starts importing
        now, and makes its CUDA context at the refill (CUDA with ncu only; one kept if it fits)."""
        key = slot_key(options, cache_dir)
        early = self._take_next(key)
        if early is not None:
            with self._lock:
                self._next = early
            return
        if options.device != "cuda" or shutil.which("ncu") is None:  # no profiler to start
            return
        root = new_root()
        try:
            profiler = timing_confirmation.start_profiler(options, cache_dir, root / "confirm", gpu_turn=True)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        if not isinstance(profiler, ncu_profiling.ProfilerAhead):  # ncu went missing: the refill starts one
            shutil.rmtree(root, ignore_errors=True)
            return
        with self._lock:
            self._next = NextProfiler(root, key, profiler)

    def refill(self, options, cache_dir: Path) -> None:
        self._drop_slot()
        early = self._take_next(slot_key(options, cache_dir))
        # this agent's GPU is idle until the next job: the CUDA contexts are made now, not at its turn
        slot = start_slot(options, cache_dir, cuda_ahead=True, early=early)
        with self._lock:
            self._slot = slot

    def _take_next(self, key: tuple) -> NextProfiler | None:
        """The profiler started early, when it fits `key` and still waits; else it ends (None)."""
        with self._lock:
            early, self._next = self._next, None
        if early is not None and not (early.key == key and early.profiler.process.waiting()):
            early.close()
            return None
        return early

    def _drop_slot(self) -> None:
        with self._lock:
            slot, self._slot = self._slot, None
        if slot is not None:
            slot.close()

    def drop(self) -> None:
        self._drop_slot()
        with self._lock:
            early, self._next = self._next, None
        if early is not None:
            early.close()


POOL = WarmPool()
atexit.register(POOL.drop)
