"""The options of one judging (JudgeOptions) and their defaults: the limits, the trials, the timing
budget, the profiler. The same for `judge`, `bench` and the worker's jobs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from profiler_agent.judge import ncu_output, profile_output

DEFAULT_TIMEOUT_S = 600.0  # the run limit: from the end of the candidate's import to the end
DEFAULT_COMPILE_TIMEOUT_S = 600.0  # importing the candidate, where load_inline builds
COMPILE_MEMORY_FLOOR = 4 * 1024**3  # a build needs room: its default memory limit is at least this
DEFAULT_TRIALS = 3
# Far beyond what tuning one kernel usually buys; an organizer takes a look, the verdict stands.
SUSPICIOUS_SPEEDUP = 20.0
# The default timing budget (seconds per model pair) of judgings given none: for a demo, or a test
# suite that judges hundreds of bundles whose figures' precision it does not check (tests/conftest.py)
TIMING_BUDGET_ENV = "PROFILER_AGENT_TIMING_BUDGET"


@dataclass
class JudgeOptions:
    device: str = "cpu"
    timeout_s: float = DEFAULT_TIMEOUT_S  # the run limit (--run-timeout, alias --timeout)
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S
    # after the build: cgroup memory.max where one can be made (any device), else RLIMIT_AS (CPU only)
    memory_limit_bytes: int | None = None
    compile_memory_limit_bytes: int | None = None  # during the build, cgroup only (see compile_memory_limit)
    cache_dir: Path | None = None
    seed: int | None = None  # None: a fresh secret seed per judgement
    atol: float | None = None  # None: the per-dtype default
    rtol: float | None = None
    trials: int = DEFAULT_TRIALS
    timing_budget_s: float | None = None  # None: $PROFILER_AGENT_TIMING_BUDGET, else TimingPlan's default
    target_rse: float | None = None
    suspicious_speedup: float = SUSPICIOUS_SPEEDUP
    ncu_timeout_s: float = ncu_output.DEFAULT_TIMEOUT_S
    ncu: bool = False  # profile a passed candidate once more under Nsight Compute (profiler_agent.judge.ncu_output)
    # called with each judging stage (result_schema.JUDGING_STAGES) as it begins: the service tells the site
    progress: Callable[[str], None] | None = None
    # a test run (the site's `mode: test`, or `judge --mode test`): the correctness trials and the verifier's
    # verdict only; no timing, no confirmation, no profiler, no second variant, no self-test
    correctness_only: bool = False
    # a profile run (the site's `mode: profile`, or `judge --mode profile`): the correctness trials, then both
    # models' kernels under Nsight Compute (judge.profile_report): at most `profile_kernels` launches of
    # each, within `profile_timeout_s`; the `.ncu-rep` and ncu's table are copied to `profile_dir` when given
    profile: bool = False
    profile_kernels: int = profile_output.DEFAULT_KERNELS_PER_MODEL
    profile_timeout_s: float = profile_output.DEFAULT_TIMEOUT_S
    profile_dir: Path | None = None
    # after the judging, start the next one's processes (judge.warm_pool.WarmPool): for agents that
    # judge job after job; the next judging with the same limits skips their imports
    keep_warm: bool = False

    def tell(self, stage: str | None) -> None:
        """Report a stage; a failing listener never stops the judging."""
        if self.progress is None or stage is None:
            return
        try:
            self.progress(stage)
        except Exception:  # noqa: BLE001  (progress is informative only)
            pass

    def compile_memory_limit(self) -> int | None:
        """The build's memory limit: the one given, else max(memory limit, 4 GiB) when there is one."""
        if self.compile_memory_limit_bytes:
            return self.compile_memory_limit_bytes
        if self.memory_limit_bytes:
            return max(self.memory_limit_bytes, COMPILE_MEMORY_FLOOR)
        return None


def seconds_from_env(name: str) -> float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise RuntimeError(f"{name} must be a positive number of seconds, got {text!r}")
    return value


def timing_budget_from_env() -> float | None:
    """PROFILER_AGENT_TIMING_BUDGET; None when unset, RuntimeError when not a positive number."""
    return seconds_from_env(TIMING_BUDGET_ENV)
