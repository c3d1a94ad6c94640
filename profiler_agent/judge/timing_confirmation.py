"""A time the judged code cannot forge: the reported medians bounded from outside the judged process.

The judged process reports both medians, and it runs submission code, which can rewrite any Python
function of the harness (a bundle that wrapped `timing.time_interleaved` got its candidate times
divided by three). So after every passed CUDA judgement the agent checks them from outside:

- The candidate, from below. The agent starts Nsight Compute on a fresh process
  (profiler_agent.graders.profiled_target) and takes the GPU's own record of the candidate's kernels:
  CONFIRM_CALLS calls on fresh inputs from a new secret seed, each call's kernel durations summed
  (`gpu__time_duration`, clocks and caches left alone), the median over calls. A per-call event time
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
seasons still rank. docs/measurement.md says what the bound guarantees and what it cannot see.
"""

from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from profiler_agent.protocol import result_schema
from profiler_agent.judge import started_ahead, trusted_process
from profiler_agent.measure import kernel_census, metrics
from profiler_agent.judge import ncu_output, ncu_profiling
from profiler_agent.sandbox.process import Limits

FLAG = "timing_unconfirmed"
CONFIRM_CALLS = 3
# ncu profiles at most CONFIRM_CALLS x this many kernels; past it the record sums a subset of the
# kernels, which is still a lower bound of the calls' kernel time (`kernels_capped`)
CONFIRM_KERNELS_PER_CALL = 100
# Reported may sit this share below the kernel record. Honest per-call medians were 0.0-1.5% above
# ncu's record for kernels >= 45 us and 41% above for an 8 us one (docs/measurement.md); ncu's
# duration of one kernel varied by ~7% between calls (5.7-6.1 us, tests/agent/fixtures), and the
# clocks, left alone in both runs, may differ by a few percent. 10% covers these with a margin.
TOLERANCE = 0.10
# Reported reference median may sit this share (+ the slack, launch jitter of tiny calls) above the
# agent's own timing of it, taken alike (same timer, same L2 flush) in another process.
REFERENCE_TOLERANCE = 0.10
REFERENCE_SLACK_MS = 0.002
REFERENCE_BUDGET_S = 1.0
# the reference's calls: their kernels name the reference's side of the census, and give its record
PROFILE = ncu_output.Profile((ncu_output.DURATION,), CONFIRM_CALLS, CONFIRM_KERNELS_PER_CALL, cache_control="none",
                      reference_calls=CONFIRM_CALLS)
NO_PROFILER_ON_CPU = "no device profiler on CPU"
NOTE_PREFIX = "[profiler_agent] timing confirmation: "


class NoKernels(ncu_output.NcuOutputError):
    """The profiled range held no kernel launch."""


@dataclass
class KernelRecord:
    kernel_ms: float  # median over calls of each call's summed kernel durations
    calls: int
    capped: bool
    candidate_kernels: list[str] = field(default_factory=list)  # names, in launch order, for the census
    reference_kernels: list[str] = field(default_factory=list)  # the reference's calls'
    # the same median for the reference's calls in the same profile; None: not profiled whole
    reference_kernel_ms: float | None = None


def kernel_record(text: str, calls: int, launch_cap: int, reference_calls: int = 0,
                  total_cap: int | None = None) -> KernelRecord:
    """The GPU's record of the candidate's kernels per call from ncu's --csv output; NcuOutputError
    when it cannot be read as one (NoKernels: nothing in the range). `launch_cap`: the candidate's
    share of ncu's launch count (Profile.candidate_cap); `total_cap`: the whole count (launch_cap),
    below which the `reference_calls` reference calls were all profiled whole."""
    launches, reference = ncu_output.split_reference(ncu_output.parse_launches(text))
    if not launches:
        raise NoKernels(f"no kernel launch matched the NVTX range {ncu_output.CANDIDATE_RANGE!r}")
    capped = len(launches) >= launch_cap
    if capped and any(launch.call is None for launch in launches):
        raise ncu_output.NcuOutputError(f"ncu stopped at its launch cap ({launch_cap}); the calls cannot be told apart")
    if any(launch.duration_ms is None for launch in launches):
        raise ncu_output.NcuOutputError("ncu gave no duration for a kernel")
    # capped: the last call reached may be cut short; its partial sum is still a lower bound
    groups = ncu_output.group_calls(launches, calls)
    sums = [sum(launch.duration_ms for launch in group) for group in groups]
    return KernelRecord(float(statistics.median(sums)), len(groups), capped, ncu_output.kernel_names(launches),
                        ncu_output.kernel_names(reference),
                        reference_record(reference, reference_calls, len(launches) + len(reference), total_cap))


def reference_record(reference: list[ncu_output.KernelLaunch], calls: int, launches: int, total_cap: int | None,
                     ) -> float | None:
    """The median of the reference's calls' kernel sums, or None unless every one of its `calls` calls
    was profiled whole (ncu's launch count not reached, each call told apart, every duration known)."""
    if not calls or not reference or total_cap is None or launches >= total_cap:
        return None
    if any(launch.call is None or launch.duration_ms is None for launch in reference):
        return None
    groups = ncu_output.group_calls(reference, calls)
    return float(statistics.median(sum(k.duration_ms for k in group) for group in groups)) if len(groups) == calls else None


def candidate_bound_holds(reported_ms: float, kernel_ms: float, tolerance: float = TOLERANCE) -> bool:
    return reported_ms >= kernel_ms * (1 - tolerance)


def reference_bound_holds(reported_ms: float, outside_ms: float, tolerance: float = REFERENCE_TOLERANCE,
                          slack_ms: float = REFERENCE_SLACK_MS) -> bool:
    return reported_ms <= outside_ms * (1 + tolerance) + slack_ms


def decide(reported_ms: float | None, reference_reported_ms: float | None, record: KernelRecord | None,
           record_why: str, reference_outside_ms: float | None, reference_why: str) -> dict:
    """The confirmation: both bounds checked where their figures are known. `confirmed` is False when
    a bound fails, None when one could not be checked (and none failed), True when both hold."""
    confirmation = result_schema.empty_confirmation()
    confirmation.update(method="ncu", reported_ms=reported_ms, tolerance=TOLERANCE,
                        reference_reported_ms=reference_reported_ms, reference_tolerance=REFERENCE_TOLERANCE)
    failed, unknown = [], []
    if record is None:
        unknown.append(record_why or "no kernel record")
    else:
        confirmation.update(kernel_ms=record.kernel_ms, calls_profiled=record.calls, kernels_capped=record.capped,
                            ranked_at_kernel_ms=False, reference_kernel_ms=record.reference_kernel_ms,
                            kernel_speedup=(record.reference_kernel_ms / record.kernel_ms
                                            if record.reference_kernel_ms and record.kernel_ms else None))
        if not reported_ms:
            unknown.append("no candidate median was reported")
        else:
            confirmation["ratio"] = reported_ms / record.kernel_ms
            if not candidate_bound_holds(reported_ms, record.kernel_ms):
                failed.append(f"the candidate's reported median ({reported_ms:.4g} ms) is below the GPU's own record "
                              f"of its kernels ({record.kernel_ms:.4g} ms per call) by more than {TOLERANCE:.0%}")
    if reference_outside_ms is None:
        unknown.append(reference_why or "the reference was not timed outside")
    else:
        confirmation["reference_outside_ms"] = reference_outside_ms
        if reference_reported_ms and not reference_bound_holds(reference_reported_ms, reference_outside_ms):
            failed.append(f"the reference's reported median ({reference_reported_ms:.4g} ms) is above the agent's "
                          f"own timing of it ({reference_outside_ms:.4g} ms) by more than {REFERENCE_TOLERANCE:.0%} "
                          f"+ {REFERENCE_SLACK_MS:g} ms")
    if failed:
        confirmation.update(confirmed=False, reason="; ".join(failed + unknown))
    elif unknown:
        confirmation.update(confirmed=None, reason="; ".join(unknown))
    else:
        confirmation["confirmed"] = True
    return confirmation


def not_confirmed(reason: str, reported_ms: float | None = None) -> dict:
    confirmation = result_schema.empty_confirmation()
    confirmation.update(reported_ms=reported_ms, reason=reason)
    return confirmation


@dataclass
class Started:
    """The confirmation's two processes, started ahead of their turn (profiler_agent.judge.started_ahead):
    the trusted check first (it ends last), then the profiler."""
    check: trusted_process.TrustedAhead
    profiler: ncu_profiling.ProfilerAhead | ncu_profiling.ProfilerRun
    outputs: Path

    def profiles(self) -> bool:
        """Whether ncu is there to record the candidate's kernels (and so the census)."""
        return isinstance(self.profiler, ncu_profiling.ProfilerAhead)

    def processes(self) -> tuple:
        profiler = (self.profiler.process,) if isinstance(self.profiler, ncu_profiling.ProfilerAhead) else ()
        return (self.check, *profiler)


def start_processes(options, cache_dir: Path, scratch: Path, cuda_ahead: bool = False) -> Started:
    """Both processes, started before the job they confirm is known (its bundle comes at their turn)."""
    scratch.mkdir(parents=True)
    profile_scratch = scratch / "profile"
    outputs = profile_scratch / "exchange"
    check = trusted_process.start_trusted("profiler_agent.graders.confirmation_check", options, scratch / "check", outputs,
                                  cuda_ahead)
    try:
        profiler = ncu_profiling.start_profiler(options.device, options.ncu_timeout_s, cache_dir,
                                          profile_scratch, PROFILE, outputs=outputs,
                                          # ncu itself shares the cgroup: the looser (build) limit
                                          limits=Limits(memory_bytes=options.compile_memory_limit()),
                                          cuda_ahead=cuda_ahead)
    except BaseException:
        check.cancel()
        raise
    return Started(check, profiler, outputs)


def start_ahead(options, cache_dir: Path, scratch: Path, cuda_ahead: bool = False) -> Started | None:
    """On CUDA, the confirmation's processes started before the judged process, so their imports
    overlap its run; None elsewhere (a CPU time is not confirmed, and a CPU host's cores are the
    judged process's)."""
    if options.device != "cuda":
        return None
    return start_processes(options, cache_dir, scratch, cuda_ahead)


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


def run_check(check: trusted_process.TrustedAhead, bundle, sources: dict[str, bytes], options, seed: int,
              verify_outputs: bool, synchronized: bool, census: dict | None = None) -> dict:
    """The trusted checking process: the profiled calls' outputs verified (when `verify_outputs`),
    the kernel census taken (when `census`), the reference timed. Its report, or an error when it
    gave none."""
    settings = {"seed": seed, "trials": CONFIRM_CALLS, "atol": options.atol, "rtol": options.rtol,
                "verify": verify_outputs, "census": census,
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


def confirm_on_device(result: dict, bundle, options, cache_dir: Path, scratch: Path, sources: dict[str, bytes],
                      started: Started | None = None) -> Outcome:
    """Profile, verify and time the reference from outside; the confirmation of `result`'s times.
    `started`: the processes started ahead (start_ahead), else they are started now."""
    timing = result["timing"]
    reported, reference_reported = timing["candidate"]["median_ms"], timing["reference"]["median_ms"]
    seed = secrets.randbelow(2**31 - 1024)  # a new secret: the judged process never saw it
    started = started or start_processes(options, cache_dir, scratch)
    clock = time.monotonic()
    try:
        profiled = ncu_profiling.finish_profiler(started.profiler, seed, bundle, bundle.candidate)
    except BaseException:
        started.check.cancel()
        raise
    profile_s, clock = time.monotonic() - clock, time.monotonic()
    record, record_why = None, profiled.why.removeprefix(ncu_output.NOTE_PREFIX).strip()
    if profiled.output is not None:
        try:
            record = kernel_record(profiled.output, CONFIRM_CALLS, PROFILE.candidate_cap, PROFILE.reference_calls,
                                   PROFILE.launch_cap)
        except ncu_output.NcuOutputError as exc:
            record_why = f"ncu's record: {exc}"
    check = run_check(started.check, bundle, sources, options, seed, profiled.output is not None,
                      synchronized="unsynchronized_work" in result["flags"],
                      census=census_settings(record, started.profiler,
                                             loaded_native="no_custom_kernel" not in result["flags"]))
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


def describe_cost(profile_s: float, check_s: float, check_durations, timeline: str = "") -> str:
    """One log line: the profiler's run (with the profiled process's own timeline) and the check's,
    with the check's own stages."""
    parts = ""
    if isinstance(check_durations, dict):
        parts = ", ".join(f"{name} {value:.2f}" for name, value in check_durations.items()
                          if isinstance(value, (int, float)))
    return (f"{NOTE_PREFIX}cost: profiler {profile_s:.2f} s" + (f" ({timeline})" if timeline else "")
            + f", check {check_s:.2f} s" + (f" ({parts})" if parts else "") + "\n")


def _withdraw_time(result: dict) -> None:
    """A wrong answer has no time worth showing (as judge_candidate does for one)."""
    timing = result["timing"]
    timing.update(reference=result_schema.empty_timing_stats(), candidate=result_schema.empty_timing_stats(), speedup=None,
                  samples=None)
    for key in ("tflops", "bandwidth_gbs", "pct_peak_bandwidth", "pct_peak_flops"):
        result["metrics"][key] = None


def add_to_result(result: dict, bundle, options, cache_dir: Path, scratch: Path, sources: dict[str, bytes],
                  started: Started | None = None) -> None:
    """Fill result["timing"]["confirmation"] for a passed candidate; flag `timing_unconfirmed` when
    its times are not confirmed on CUDA; fail it when its profiled outputs were wrong. Never raises.
    `started` (start_ahead) is used or cancelled."""
    if result["status"] != "passed" or options.device != "cuda":
        started_ahead.cancel_all(*(started.processes() if started else ()))
    if result["status"] != "passed":
        return
    reported = result["timing"]["candidate"]["median_ms"]
    if options.device != "cuda":
        result["timing"]["confirmation"] = not_confirmed(NO_PROFILER_ON_CPU, reported)
        return
    try:
        outcome = confirm_on_device(result, bundle, options, cache_dir, scratch, sources, started)
    except Exception as exc:  # noqa: BLE001  (the check failing is an unconfirmed time, never a crash)
        outcome = Outcome(not_confirmed(f"the check failed: {type(exc).__name__}: {exc}", reported))
    apply_outcome(result, outcome)


def rank_within_kernel_records(result: dict) -> None:
    """A speedup is never ranked above what the GPU's own record of both models' kernels shows, nor above
    the reference as the agent timed it itself, whether the confirmation holds or not.

    The empty event pair subtracted from every call is a little longer than the wait before a real
    call's first kernel, so a call of a few microseconds can read under its kernels (lb-add-layernorm
    on the H100: 5.4-5.5 us net for 5.57 us of kernels, ranked up to 6% over its true speedup). The
    confirmation's profile records both models' kernels per call, under the same clocks: where its
    ratio (`kernel_speedup`) is below the timed speedup, the candidate is ranked at its record in the
    timing's units (the reference's median x candidate record / reference record), with the speedup and
    throughput that follow. A ratio, not the record itself: the profile runs at whatever clock the GPU
    is at then, and an absolute floor at a record taken 5% slower ranked lb-mlp-gelu 5% under its truth.
    Both records come from a process that runs submission code, so they may only lower a speedup.
    Without a whole reference record, the candidate's median is floored at its own record instead. A
    reference whose reported median is above the agent's own timing of it past the bound is taken at
    the agent's figure.

    A figure that fails a bound (a forger's) is lowered the same way and stays flagged
    `timing_unconfirmed`: what every page, API and export shows, and what an organizer's clearing of
    the flag would rank, is never above the records. `confirmation.reported_ms` and `timed_speedup`
    keep the judged process's own figures.

    What it costs: the true speedup here is the kernels' (docs/measurement.md's definition), so a candidate is not
    credited for gaps the reference leaves between its kernels on the GPU, nor for kernels that overlap
    on several streams (they sum to more than the call lasts)."""
    timing, confirmation = result["timing"], result["timing"]["confirmation"]
    kernel_ms, reported = confirmation.get("kernel_ms"), confirmation.get("reported_ms")
    kernel_speedup, reference_ms = confirmation.get("kernel_speedup"), timing["reference"]["median_ms"]
    outside_ms = confirmation.get("reference_outside_ms")
    if not reported or not reference_ms:
        return
    timed = reference_ms / reported
    bounds = []  # (speedup no figure may pass, why)
    if kernel_speedup:
        bounds.append((kernel_speedup, f"the kernels' record of both models ({kernel_speedup:.4g})"))
    elif kernel_ms:
        bounds.append((reference_ms / kernel_ms, f"the candidate's kernel record ({kernel_ms:.4g} ms)"))
    if outside_ms and not reference_bound_holds(reference_ms, outside_ms):
        bounds.append((outside_ms / max(reported, kernel_ms or 0),
                       f"the reference as the agent timed it ({outside_ms:.4g} ms)"))
    if not bounds:
        return
    ranked, why = min(bounds)
    if ranked >= timed:
        return
    ranked_ms = reference_ms / ranked
    timing["candidate"]["median_ms"] = ranked_ms
    timing["speedup"] = ranked
    counted, device = result["metrics"], result["device"]
    result["metrics"] = metrics.derived_metrics(counted["flops"], counted["bytes"], ranked_ms,
                                                device.get("peak_gbps"), device.get("peak_tflops"))
    confirmation.update(ranked_at_kernel_ms=True, timed_speedup=timed)
    result["logs"]["stderr"] += (f"{NOTE_PREFIX}the timed speedup ({timed:.4g}) is above {why}: ranked at {ranked:.4g}, "
                                 f"the candidate at {ranked_ms:.4g} ms (it reported {reported:.4g} ms)\n")


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
    if confirmation["confirmed"] is not True:
        result["flags"] = sorted(set(result["flags"]) | {FLAG})
        result["logs"]["stderr"] += f"{NOTE_PREFIX}not confirmed: {confirmation['reason']}\n"
    if outcome.wrong_answer:
        result["status"] = "wrong_answer"
        result["reason"] = f"under the profiler: {outcome.wrong_answer}"
        result["correctness"]["passed"] = False
        _withdraw_time(result)
        result["logs"]["stderr"] += f"[profiler_agent] verifier: wrong answer under the profiler: {outcome.wrong_answer}\n"
