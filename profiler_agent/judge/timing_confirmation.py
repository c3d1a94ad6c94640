"""A time the judged code cannot forge: the reported medians bounded from outside the judged process.

The judged process reports both medians, and it runs submission code, which can rewrite any Python
function of the harness (a bundle that wrapped `timing.time_interleaved` got its candidate times
divided by three). So after every passed CUDA judgement the agent checks them from outside:

- The candidate, from below. The agent starts Nsight Compute on a fresh process
  (profiler_agent.graders.profiled_target) and takes the GPU's own record of the candidate's kernels:
  CONFIRM_CALLS calls on fresh inputs from a new secret seed (SHORT_CALL_CALLS for calls of a few
  microseconds), each call's kernel durations summed (`gpu__time_duration`, clocks and caches left
  alone), the median over calls. A per-call event time
  covers every kernel of the call plus the gaps between them, so an honest median is at least that
  sum; one below it by more than TOLERANCE is not believed. The profiled calls' outputs go to the
  trusted verifier: a candidate that does less work under the profiler gives wrong answers and fails.
- The reference, from above. A kernel record is a lower bound, so it cannot catch an inflated
  reference time (which inflates the speedup). The agent times the reference itself, in the trusted
  checking process (profiler_agent.graders.confirmation_check), which never loads submission code; a
  reported reference median above that by more than REFERENCE_TOLERANCE (+ REFERENCE_SLACK_MS) is
  not believed.

Anything not believed, and anything that could not be checked (no ncu, counters refused, a timeout,
no kernel in the profiled range), adds the flag `timing_unconfirmed`: the site keeps the run out of
the standings until an organizer clears it. A forger gains nothing by making the check fail. On CPU
there is no device profiler: the confirmation says so (`confirmed` null) and no flag is added, so CPU
seasons still rank. The bounds and the figure ranked when one fails: profiler_agent.judge.timing_bounds;
docs/measurement.md says what the bound guarantees and what it cannot see.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from profiler_agent.protocol import result_schema
from profiler_agent.judge import started_ahead, trusted_process
from profiler_agent.judge import cpu_demonstration
from profiler_agent.judge.timing_bounds import (FLAG, NOTE_PREFIX, CPU_TIME, KernelRecord, decide, kernel_record, not_confirmed,
                                                rank_within_kernel_records)
from profiler_agent.measure import kernel_census
from profiler_agent.judge import ncu_output, ncu_profiling
from profiler_agent.sandbox import privileges
from profiler_agent.sandbox.process import Limits

CONFIRM_CALLS = 3
# A call of a few microseconds varies by a few percent from call to call under ncu, its first profiled
# call more (lb-add-layernorm on an H200: 4.96-5.57 us; bench/judge/confirmation_spread.py): medians of
# 3 calls put its kernel ratio at 1.73-1.87 against 1.85-1.89 for medians of 15, and a speedup is never
# ranked above that ratio. Calls reported under SHORT_CALL_MS get SHORT_CALL_CALLS calls of each model.
# Each extra call draws fresh inputs twice (here and in the verifier): a call that short reads a few
# tens of MB at most, and a longer one varies by under 2% (~0.2 us of jitter). Both models' calls share
# ncu's launch cap (PROFILE.calls_cap, 400, and one warm-up launch): past 44 kernels a call for the two together, the
# reference's record is not taken and the candidate is bounded by its own alone.
SHORT_CALL_MS = 0.01
SHORT_CALL_CALLS = 9
# ncu profiles at most CONFIRM_CALLS x this many kernels; past it the record sums a subset of the
# kernels, which is still a lower bound of the calls' kernel time (`kernels_capped`)
CONFIRM_KERNELS_PER_CALL = 100
REFERENCE_BUDGET_S = 1.0
# the reference's calls: their kernels name the reference's side of the census, and give its record
PROFILE = ncu_output.Profile((ncu_output.DURATION,), CONFIRM_CALLS, CONFIRM_KERNELS_PER_CALL, cache_control="none",
                             reference_calls=CONFIRM_CALLS, most_calls=SHORT_CALL_CALLS, warm_up=True)
NO_PROFILER_ON_CPU = "no device profiler on CPU, and calls under 1 ms are not timed from outside"


@dataclass
class EarlyJob:
    """The profiler's job, given while the verifier runs (profile_beside_verification)."""
    seed: int
    calls: int
    gate: Path  # made once the verifier is done: the profiled calls wait for it


@dataclass
class Started:
    """The confirmation's two processes, started ahead of their turn (profiler_agent.judge.started_ahead):
    the trusted check first (it ends last), then the profiler."""
    check: trusted_process.TrustedAhead
    profiler: ncu_profiling.ProfilerAhead | ncu_profiling.ProfilerRun
    outputs: Path
    scratch: Path
    early: EarlyJob | None = None

    def profiles(self) -> bool:
        """Whether ncu is there to record the candidate's kernels (and so the census)."""
        return isinstance(self.profiler, ncu_profiling.ProfilerAhead)

    def processes(self) -> tuple:
        profiler = (self.profiler.process,) if isinstance(self.profiler, ncu_profiling.ProfilerAhead) else ()
        return (self.check, *profiler)


def start_profiler(options, cache_dir: Path, scratch: Path, cuda_ahead: bool = False,
                   gpu_turn: bool = False) -> ncu_profiling.ProfilerAhead | ncu_profiling.ProfilerRun:
    """The confirmation's profiler, started in `scratch`/profile before the job it confirms is known
    (start_processes takes one so started, judge.warm_pool)."""
    return ncu_profiling.start_profiler(options.device, options.ncu_timeout_s, cache_dir,
                                        scratch / "profile", PROFILE, outputs=scratch / "profile" / "exchange",
                                        # ncu itself shares the cgroup: the looser (build) limit
                                        limits=Limits(memory_bytes=options.compile_memory_limit()),
                                        # given its job beside the verifier, it may wait for it that long
                                        cuda_ahead=cuda_ahead, wait_s=options.timeout_s, gpu_turn=gpu_turn)


def start_processes(options, cache_dir: Path, scratch: Path, cuda_ahead: bool = False,
                    profiler: ncu_profiling.ProfilerAhead | ncu_profiling.ProfilerRun | None = None) -> Started:
    """Both processes, started before the job they confirm is known (its bundle comes at their turn).
    `profiler`: one started earlier in `scratch` (start_profiler with gpu_turn: judge.warm_pool gives
    it its turn at the GPU)."""
    scratch.mkdir(parents=True, exist_ok=profiler is not None)
    outputs = scratch / "profile" / "exchange"
    check = trusted_process.start_trusted("profiler_agent.graders.confirmation_check", options, scratch / "check", outputs,
                                  cuda_ahead)
    try:
        if profiler is None:
            profiler = start_profiler(options, cache_dir, scratch, cuda_ahead)
    except BaseException:
        check.cancel()
        raise
    return Started(check, profiler, outputs, scratch)


def profile_beside_verification(started: Started | None, bundle, report: dict, judged_outputs: Path) -> None:
    """Give the profiler its job before the verifier runs, when the judged process passed: the
    profiled process loads the candidate beside the verification (about as long as it), then waits
    for the gate that confirm_on_device makes once the verifier is done, so the GPU is its alone for
    the calls it records. The judged process's outputs are taken from the sandbox user first: the
    profiled process runs that user's submission code while the verifier reads them."""
    if started is None or not started.profiles():
        return
    reported = ((report.get("timing") or {}).get("candidate") or {}).get("median_ms")
    profiler = started.profiler
    privileges.take_back(judged_outputs, profiler.user)
    gate_folder = started.scratch / "gate"  # the agent's: the sandbox user cannot make the gate there
    gate_folder.mkdir()
    early = EarlyJob(secrets.randbelow(2**31 - 1024), confirm_calls(reported if isinstance(reported, (int, float))
                                                                     else None), gate_folder / "open")
    ncu_profiling.give_profiler(profiler, early.seed, bundle, bundle.candidate, None, early.calls, early.gate)
    started.early = early


def start_ahead(options, cache_dir: Path, scratch: Path, cuda_ahead: bool = False,
                profiler: ncu_profiling.ProfilerAhead | ncu_profiling.ProfilerRun | None = None) -> Started | None:
    """On CUDA, the confirmation's processes started before the judged process, so their imports
    overlap its run; None elsewhere (a CPU time is not confirmed, and a CPU host's cores are the
    judged process's)."""
    if options.device != "cuda":
        return None
    return start_processes(options, cache_dir, scratch, cuda_ahead, profiler)


def census_settings(record: KernelRecord | None, profiler, loaded_native: bool) -> dict | None:
    """What the check needs to take the kernel census from ncu's record: the kernel names, and where
    the profiled process's build and JIT caches are (kernel_symbols reads the names they define)."""
    if record is None or not isinstance(profiler, ncu_profiling.ProfilerAhead):
        return None
    return {"candidate": record.candidate_kernels, "reference": record.reference_kernels,
            "loaded_native": loaded_native,
            "build_dirs": [str(profiler.workdir), str(profiler.extensions),
                           str(profiler.home / ".cupy" / "kernel_cache")],
            "triton_cache": str(profiler.home / ".triton" / "cache")}


def confirm_calls(reported_ms: float | None) -> int:
    """How many calls of each model the profiler records: more for calls reported short."""
    return SHORT_CALL_CALLS if reported_ms is not None and 0 < reported_ms < SHORT_CALL_MS else CONFIRM_CALLS


def run_check(check: trusted_process.TrustedAhead, bundle, sources: dict[str, bytes], options, seed: int,
              verify_outputs: bool, synchronized: bool, census: dict | None = None, case: str | None = None,
              trials: int = CONFIRM_CALLS) -> dict:
    """The trusted checking process: the profiled calls' outputs verified (when `verify_outputs`),
    the kernel census taken (when `census`), the reference timed, on the input case `case`. Its
    report, or an error when it gave none."""
    settings = {"seed": seed, "trials": trials, "atol": options.atol, "rtol": options.rtol,
                "verify": verify_outputs, "census": census, "case": case,
                "reference_timing": {"budget_s": REFERENCE_BUDGET_S, "synchronized": synchronized}}
    run, report = trusted_process.finish_trusted(check, settings, bundle, sources)
    if not isinstance(report, dict):
        return {"error": {"message": f"the checking process ended (exit {run.exit_code}, timed out: "
                                     f"{run.timed_out}) without a report:\n{ncu_profiling.last_lines(run.stderr)}"}}
    return report


@dataclass
class Outcome:
    confirmation: dict
    wrong_answer: str = ""  # the verifier's reason when the profiled calls' outputs were wrong
    census: dict | None = None  # the kernel census from ncu's record (kernel_census.Census.as_report)
    custom_kernel: bool | None = None  # its finding; None: it cannot tell
    cost: str = ""  # where the confirmation's time went, for the log
    where: str = "under the profiler"  # where wrong outputs were found, for the reason


def confirm_on_device(result: dict, bundle, options, cache_dir: Path, scratch: Path, sources: dict[str, bytes],
                      started: Started | None = None, case: str | None = None) -> Outcome:
    """Profile, verify and time the reference from outside; the confirmation of `result`'s times.
    `started`: the processes started ahead (start_ahead), else they are started now. `case`: the input
    case `result` judged (None: the judging's first, whose record also gives the kernel census)."""
    timing = result["timing"]
    reported, reference_reported = timing["candidate"]["median_ms"], timing["reference"]["median_ms"]
    started = started or start_processes(options, cache_dir, scratch)
    early = started.early if case is None else None
    # a new secret: the judged process never saw it
    seed = early.seed if early else secrets.randbelow(2**31 - 1024)
    calls = early.calls if early else confirm_calls(reported)
    clock = time.monotonic()
    try:
        if early:
            early.gate.touch()  # the verifier is done: the GPU is the profiled calls' alone
            profiled = ncu_profiling.collect_profiler(started.profiler)
        else:
            profiled = ncu_profiling.finish_profiler(started.profiler, seed, bundle, bundle.candidate, case, calls)
    except BaseException:
        started.check.cancel()
        raise
    profile_s, clock = time.monotonic() - clock, time.monotonic()
    record, record_why = None, profiled.why.removeprefix(ncu_output.NOTE_PREFIX).strip()
    if profiled.output is not None:
        try:
            record = kernel_record(profiled.output, calls, PROFILE.candidate_cap, calls, PROFILE.calls_cap)
        except ncu_output.NcuOutputError as exc:
            record_why = f"ncu's record: {exc}"
    wanted = None if case is not None else census_settings(record, started.profiler,
                                                           loaded_native="no_custom_kernel" not in result["flags"])
    if wanted is not None:  # the profiled process has ended: its private folders become the check's to read
        privileges.hand_over(started.profiler.workdir, started.check.user)
        privileges.hand_over(started.profiler.home, started.check.user)
    check = run_check(started.check, bundle, sources, options, seed, profiled.output is not None,
                      synchronized="unsynchronized_work" in result["flags"], census=wanted, case=case, trials=calls)
    cost = describe_cost(profile_s, time.monotonic() - clock, check.get("durations_s"), profiled.timeline)
    verdict = check.get("verdict") if isinstance(check.get("verdict"), dict) else None
    correctness = (verdict or {}).get("correctness") or {}
    if correctness.get("passed") is False:
        reason = f"the profiled calls gave wrong outputs: {correctness.get('reason')}"
        return Outcome(not_confirmed(reason, reported) | {"method": "ncu", "confirmed": False}, reason, cost=cost)
    if profiled.output is not None and correctness.get("passed") is not True:
        record, record_why = None, "the profiled calls' outputs could not be verified"
    reference_outside = check.get("reference_ms")
    reference_why = "" if isinstance(reference_outside, (int, float)) else (
        "the reference could not be timed outside: " + str((check.get("error") or {}).get("message", ""))[:500])
    if not isinstance(reference_outside, (int, float)):
        reference_outside = None
    census = check.get("census") if isinstance(check.get("census"), dict) else None
    custom = check.get("custom_kernel") if isinstance(check.get("custom_kernel"), bool) else None
    return Outcome(decide(reported, reference_reported, record, record_why, reference_outside, reference_why),
                   census=census, custom_kernel=custom, cost=cost)


def confirm_on_cpu(result: dict, bundle, options, cache_dir: Path, scratch: Path, sources: dict[str, bytes],
                   case: str | None = None) -> Outcome:
    """The candidate's least time as the agent read it from outside (judge.cpu_demonstration), its
    outputs verified and the reference's least time read by the trusted check; the confirmation of
    `result`'s times."""
    timing = result["timing"]
    reported, reference_reported = timing["candidate"]["median_ms"], timing["reference"]["median_ms"]
    seed = secrets.randbelow(2**31 - 1024)  # a new secret: the judged process never saw it
    calls = cpu_demonstration.calls_for(reported)
    scratch.mkdir(parents=True)
    clock = time.monotonic()
    shown = cpu_demonstration.demonstrate(bundle, bundle.candidate, options, cache_dir, scratch / "demonstration",
                                          seed, calls, case)
    demonstrate_s, clock = time.monotonic() - clock, time.monotonic()
    if shown.stretch is None:
        return Outcome(decide(reported, reference_reported, None, shown.why, None, "", CPU_TIME))
    check = trusted_process.start_trusted("profiler_agent.graders.confirmation_check", options, scratch / "check",
                                          shown.outputs, extra_env=cpu_demonstration.IDLE_THREADS_SLEEP)
    settings = {"seed": seed, "trials": calls, "atol": options.atol, "rtol": options.rtol, "case": case,
                "demonstration": {"calls": calls, "secret": shown.secret},
                "reference_timing": {"budget_s": REFERENCE_BUDGET_S, "synchronized": False}}
    run, report = trusted_process.finish_trusted(check, settings, bundle, sources)
    report = report if isinstance(report, dict) else {"error": {"message": f"the checking process ended (exit "
                                                                          f"{run.exit_code}) without a report"}}
    stretch = shown.stretch
    cost = describe_cost(demonstrate_s, time.monotonic() - clock, report.get("durations_s"),
                         f"{calls} calls: {stretch.total_ns / 1e6:.1f} ms on a CPU (busiest thread "
                         f"{stretch.busiest_thread_ns / 1e6:.1f} ms, {stretch.cores} cores) in "
                         f"{shown.wall_ms:.1f} ms", what="demonstration")
    correctness = ((report.get("verdict") or {}).get("correctness")) or {}
    if correctness.get("passed") is False:
        reason = f"the demonstrated calls gave wrong outputs: {correctness.get('reason')}"
        return Outcome(not_confirmed(reason, reported) | {"method": CPU_TIME.name, "confirmed": False}, reason, cost=cost,
                       where="in the calls the agent timed from outside")
    record, record_why = None, "the demonstrated calls' outputs could not be verified"
    harness_ms = report.get("harness_ms")
    if isinstance(report.get("uncommitted"), str):  # a forger's, or a nondeterministic candidate's: flagged
        reason = report["uncommitted"]
        return Outcome(decide(reported, reference_reported, None, "", None, "", CPU_TIME)
                       | {"confirmed": False, "reason": reason}, cost=cost)
    reference_floor = report.get("reference_floor_ms")
    if correctness.get("passed") is True and isinstance(harness_ms, (int, float)):
        share = harness_ms * 1e6 / stretch.total_ns
        if share > cpu_demonstration.MAX_HARNESS_SHARE:
            record_why = (f"the harness's own work (making the values, a checksum of each output: {harness_ms:.1f} ms) is "
                          f"{share:.0%} of the {stretch.total_ns / 1e6:.1f} ms of CPU time the calls took: too much "
                          "to bound the call")
        else:
            floor_ms = stretch.wall_floor_ns(round(harness_ms * 1e6)) / 1e6 / calls
            record = KernelRecord(floor_ms, calls, False, reference_kernel_ms=(
                reference_floor if isinstance(reference_floor, (int, float)) and reference_floor > 0 else None))
            record_why = ""
    return Outcome(decide(reported, reference_reported, record, record_why, None, "", CPU_TIME), cost=cost)


def describe_cost(profile_s: float, check_s: float, check_durations, timeline: str = "", what: str = "profiler") -> str:
    """One log line: the profiler's run (with the profiled process's own timeline) and the check's,
    with the check's own stages."""
    parts = ""
    if isinstance(check_durations, dict):
        parts = ", ".join(f"{name} {value:.2f}" for name, value in check_durations.items()
                          if isinstance(value, (int, float)))
    return (f"{NOTE_PREFIX}cost: {what} {profile_s:.2f} s" + (f" ({timeline})" if timeline else "")
            + f", check {check_s:.2f} s" + (f" ({parts})" if parts else "") + "\n")


def _withdraw_time(result: dict) -> None:
    """A wrong answer has no time worth showing (as judge_candidate does for one)."""
    timing = result["timing"]
    timing.update(reference=result_schema.empty_timing_stats(), candidate=result_schema.empty_timing_stats(), speedup=None,
                  samples=None)
    for key in ("tflops", "bandwidth_gbs", "pct_peak_bandwidth", "pct_peak_flops"):
        result["metrics"][key] = None


def add_to_result(result: dict, bundle, options, cache_dir: Path, scratch: Path, sources: dict[str, bytes],
                  started: Started | None = None, case: str | None = None) -> None:
    """Fill result["timing"]["confirmation"] for a passed candidate; flag `timing_unconfirmed` when
    its times are not confirmed on CUDA; fail it when its profiled outputs were wrong. Never raises.
    `started` (start_ahead) is used or cancelled. `case`: the input case `result` judged (None: the
    judging's first; judge.case_judging confirms the others)."""
    if result["status"] != "passed" or options.device != "cuda":
        started_ahead.cancel_all(*(started.processes() if started else ()))
    if result["status"] != "passed":
        return
    reported = result["timing"]["candidate"]["median_ms"]
    if options.device != "cuda" and not (reported and reported >= cpu_demonstration.MIN_CALL_MS):
        result["timing"]["confirmation"] = not_confirmed(NO_PROFILER_ON_CPU, reported)
        return
    try:
        if options.device != "cuda":
            outcome = confirm_on_cpu(result, bundle, options, cache_dir, scratch, sources, case)
        else:
            outcome = confirm_on_device(result, bundle, options, cache_dir, scratch, sources, started, case)
    except Exception as exc:  # noqa: BLE001  (the check failing is an unconfirmed time, never a crash)
        outcome = Outcome(not_confirmed(f"the check failed: {type(exc).__name__}: {exc}", reported)
                          | ({} if options.device == "cuda" else {"method": CPU_TIME.name}))
    apply_outcome(result, outcome)


def apply_outcome(result: dict, outcome: Outcome) -> None:
    """Record the confirmation; rank no speedup above the kernels' record; flag what is
    not confirmed; fail wrong profiled outputs."""
    confirmation = outcome.confirmation
    result["timing"]["confirmation"] = confirmation
    rank_within_kernel_records(result)
    result["logs"]["stderr"] += outcome.cost
    if outcome.census is not None:  # taken from outside the judged process: it replaces the child's
        result["kernels"] = kernel_census.from_report(outcome.census)
        if outcome.custom_kernel is not None:
            flags = set(result["flags"]) - {"no_custom_kernel"}
            result["flags"] = sorted(flags if outcome.custom_kernel else flags | {"no_custom_kernel"})
    # on the CPU a time that could not be bounded (short calls, mostly harness work) is no finding
    # against the run, as without a device profiler; one that fails its bound is
    on_cpu = confirmation.get("method") == CPU_TIME.name
    if confirmation["confirmed"] is False or (confirmation["confirmed"] is None and not on_cpu):
        result["flags"] = sorted(set(result["flags"]) | {FLAG})
        result["logs"]["stderr"] += f"{NOTE_PREFIX}not confirmed: {confirmation['reason']}\n"
    elif confirmation["confirmed"] is None:
        result["logs"]["stderr"] += f"{NOTE_PREFIX}not bounded (no flag on the CPU): {confirmation['reason']}\n"
    if outcome.wrong_answer:
        result["status"] = "wrong_answer"
        result["reason"] = f"{outcome.where}: {outcome.wrong_answer}"
        result["correctness"]["passed"] = False
        _withdraw_time(result)
        result["logs"]["stderr"] += f"[profiler_agent] verifier: wrong answer {outcome.where}: {outcome.wrong_answer}\n"
