"""Judging a bundle: the candidate, the LLM variant and the self-test, each in its own sandboxed
process, assembled into one schema-1 result."""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from profiler_agent.executors import build_cache
from profiler_agent.devices import device_info
from profiler_agent.measure import kernel_census, metrics
from profiler_agent.judge import timing_confirmation, ncu_profiling, profile_report
from profiler_agent.sandbox import privileges
from profiler_agent.protocol import result_schema
from profiler_agent.bundles.bundle import Bundle, LLM_VARIANT_NAME
from profiler_agent.sandbox.capped_logs import read_capped
from profiler_agent.sandbox.process import SandboxRun
from profiler_agent.judge.memory_notes import memory_note
from profiler_agent.judge import started_ahead, failure_reasons, warm_pool, trusted_process, case_judging, self_test_run
from profiler_agent.judge.options import SUSPICIOUS_SPEEDUP, JudgeOptions, timing_budget_from_env
from profiler_agent.judge.verdicts import classify

WARM_NOTE = "[profiler_agent] judged by processes started before this job arrived (judge.warm_pool)\n"
CORRECTNESS_ONLY_NOTE = ("[profiler_agent] test mode: correctness trials and the verifier's verdict only; not timed, "
                         "not confirmed, no self-test\n")
PROFILE_NOTE = ("[profiler_agent] profile mode: correctness trials and the verifier's verdict, then both models' "
                "kernels under the profiler (result profile); not timed, not confirmed, no self-test\n")
# The judged child's stages (sandbox.phase_limits.STAGE_WORDS) as the judging stages a contestant sees
# (result_schema.JUDGING_STAGES): importing and building is compiling, the trials are checking.
JUDGING_STAGE_OF_CHILD = {
    "load_reference": "compiling",
    "load_candidate": "compiling",
    "build_models": "compiling",
    "correctness": "checking",
    "timing": "timing",
    "kernel_census": "profiling",
}


@dataclass
class CandidateJudgement:
    status: str
    report: dict | None
    run: SandboxRun
    compile_log: str
    limits_note: str = ""  # how memory was limited (memory_note)
    reason: str | None = None  # one line, for every status but passed (judge.failure_reasons)


def snapshot_sources(bundle: Bundle) -> dict[str, bytes]:
    """The bundle's Python files, read before any submission code runs: the verifier gets its
    reference from here, not from a folder the judged process could have rewritten."""
    return {p.name: p.read_bytes() for p in sorted(bundle.root.glob("*.py")) if p.is_file()}


def judge_candidate(
    bundle: Bundle, candidate: Path, options: JudgeOptions, seed: int, cache_dir: Path,
    sources: dict[str, bytes], judged: warm_pool.JudgedAhead, verifier: trusted_process.TrustedAhead, census_in_child: bool = True,
    case: str | None = None, beside_verification: Callable[[dict], None] | None = None,
) -> CandidateJudgement:
    """Judge one candidate in the processes started for it (warm_pool.start_pair), each used or cancelled.
    `census_in_child` False: the kernel census is taken from ncu's record instead (judge.timing_confirmation).
    `case`: the reference's input case to judge (None: the judging's first; judge.case_judging).
    `beside_verification(report)`: called with the judged process's report when it passed, just
    before the verifier runs (the confirmation's profiler loads beside it)."""
    key = build_cache.build_key(candidate, options.device)
    failed_before = build_cache.cached_failure(cache_dir, key)
    if failed_before is not None:
        started_ahead.cancel_all(judged, verifier)
        return failure_from_cache(failed_before)
    shutil.copytree(bundle.root, judged.workdir, dirs_exist_ok=True)  # submission code may write to its cwd
    user = judged.user
    builds = build_cache.reachable_cache_dir(cache_dir, user)
    extensions = builds / key[:16]  # build_cache.extensions_dir
    compile_log = judged.compile_log
    settings = {
        "seed": seed,
        "trials": options.trials,
        "atol": options.atol,
        "rtol": options.rtol,
        "timing": {"budget_s": options.timing_budget_s if options.timing_budget_s is not None
                   else timing_budget_from_env(), "target_rse": options.target_rse},
        "kernel_census": census_in_child,
        "correctness_only": options.correctness_only,  # the judged process stops after its trials
        "case": case,  # every process draws this input case's inputs (bundles.input_cases)
        # an address-space limit breaks CUDA, whose context reserves tens of GB of it
        "memory_limit_bytes": options.memory_limit_bytes if options.device == "cpu" else None,
    }
    job = {"reference": bundle.reference.name, "candidate": candidate.name, "extensions_dir": str(extensions)}
    judged.stages.listener = lambda stage: options.tell(JUDGING_STAGE_OF_CHILD.get(stage))
    with build_cache.exclusive(extensions):
        privileges.hand_over(judged.scratch, user)
        privileges.hand_over(extensions, user)
        run = judged.process.finish(json.dumps({**settings, **job}).encode())
    if run.ended_waiting:
        started_ahead.cancel_all(verifier)
        return ended_before_its_job(run)
    report = trusted_process.parse_report(run.report)
    if report is not None and isinstance(report.get("correctness"), dict):
        report["correctness"].pop("reference_numpy", None)  # the verifier's finding alone
    if report is not None:
        report.pop("case_plan", None)  # the verifier's alone (verify_outputs): which cases are judged
    status = classify(run, report)
    compile_text = read_capped(compile_log)
    if run.timed_out and run.phase == "compile":
        compile_text += (f"\n[profiler_agent] compile timed out after {options.compile_timeout_s:g} s; "
                         "the process and its children were killed\n")
    if status == "compile_error":
        ended_normally = not run.timed_out and run.exit_code == 0 and not run.oom_kills and run.memory_exceeded is None
        codes_fault, why = build_cache.build_failed_by_the_code((report or {}).get("error"), compile_text, ended_normally)
        if codes_fault:
            build_cache.record_failure(cache_dir, key, compile_text, report["error"])
        else:
            compile_text += f"\n[profiler_agent] this failure is not kept in the build cache: {why}\n"
    if status in ("passed", "wrong_answer"):
        # the judged process's own comparison ran beside submission code: decide it again here
        options.tell("checking")
        if status == "passed" and beside_verification is not None:
            beside_verification(report)
        started = time.monotonic()
        status = verify_outputs(verifier, bundle, sources, settings, report)
        report.setdefault("durations_s", {})["verify"] = time.monotonic() - started
        if status != "passed":
            report["timing"] = None  # a wrong answer has no time worth showing
    else:
        started_ahead.cancel_all(verifier)
    limits = failure_reasons.Limits(options.timeout_s, options.compile_timeout_s, options.memory_limit_bytes,
                            options.compile_memory_limit())
    reason = failure_reasons.explain(status, run, report, compile_text, limits)
    return CandidateJudgement(status, report, run, compile_text, memory_note(run, options, status, report), reason)


def ended_before_its_job(run: SandboxRun) -> CandidateJudgement:
    """The judged process, started ahead, ended before its settings came (killed from outside, say):
    nothing of the submission ran in it. The agent's fault: internal_error, which the site judges again."""
    message = (f"the judged process ended (exit code {run.exit_code}) while it waited for its job, before any "
               "submission code ran: not the submission's doing")
    report = {"error": {"origin": "harness", "stage": "start", "type": "EndedWhileWaiting", "message": message},
              "flags": [], "durations_s": {}}
    return CandidateJudgement("internal_error", report, run, "", reason=message)


def failure_from_cache(record: dict) -> CandidateJudgement:
    """The compile error a build of the same key ended with, reported again without compiling."""
    note = (f"\n[profiler_agent] this compile error comes from the build cache: the same sources and "
            f"toolchain (build key {record.get('key', '')[:16]}) failed to build at {record.get('failed_at')}; "
            "not compiled again\n")
    error = {**record["error"], "origin": "submission"}
    report = {"error": error, "flags": [], "durations_s": {"compile": 0.0}}
    run = SandboxRun(exit_code=None, timed_out=False, report=None, stdout="", stderr="", wall_s=0.0)
    reason = failure_reasons.explain("compile_error", run, report, record["compile_log"], None)
    return CandidateJudgement("compile_error", report, run, record["compile_log"] + note,
                              note.lstrip("\n"), f"{reason} (from the build cache)")


def verify_outputs(verifier: trusted_process.TrustedAhead, bundle: Bundle, sources: dict[str, bytes], settings: dict,
                   report: dict) -> str:
    """Run the trusted verifier (warm_pool.start_verifier) on the candidate's outputs; its verdict replaces the
    judged process's correctness and nondeterminism findings. Returns the status."""
    run, verdict = trusted_process.finish_trusted(verifier, settings, bundle, sources)
    flags = [f for f in report.get("flags", []) if f != "nondeterministic_output"]
    if verdict is None or not isinstance(verdict.get("correctness"), dict):
        report["error"] = {"origin": "harness", "stage": "verify", "type": "VerifierFailed",
                           "message": f"the verifier ended (exit {run.exit_code}, timed out: {run.timed_out}) "
                                      f"without a verdict:\n{run.stderr[-4000:]}"}
        return "internal_error"
    failure_reasons.name_first_failure(verdict["correctness"], report.get("correctness"))
    failure_reasons.name_unjoined_stream(verdict["correctness"], report.get("correctness"))
    failure_reasons.timed_call_failure_stands(verdict["correctness"], report.get("correctness"))
    report["correctness"] = verdict["correctness"]
    report["inputs"] = verdict.get("inputs")  # the verifier's: drawn outside the judged process
    report["case_plan"] = {"case": verdict.get("case"), "cases": verdict.get("cases")}  # the verifier's, too
    report["verdict_note"] = failure_reasons.verifier_note(verdict)
    report["flags"] = flags + [f for f in verdict.get("flags", []) if f == "nondeterministic_output"]
    error = verdict.get("error")
    if error:
        report["error"] = error
        return "runtime_error" if error.get("origin") == "submission" else "internal_error"
    return "passed" if verdict["correctness"].get("passed") is True else "wrong_answer"


def _harness_note(judgement: CandidateJudgement, timeout_s: float) -> str:
    run = judgement.run
    if run.timed_out and run.phase == "compile":
        return f"[profiler_agent] compile timed out after {run.limit_s:g} s (see the compile log)\n"
    if run.timed_out:
        limit_s = run.limit_s if run.limit_s is not None else timeout_s
        return f"[profiler_agent] timed out after {limit_s:g} s; the process and its children were killed\n"
    if run.memory_exceeded is not None:
        return "[profiler_agent] the agent's memory watchdog killed the process tree\n"
    if judgement.report is None:
        return f"[profiler_agent] the judged process ended (exit code {run.exit_code}) without a report\n"
    return ""


def _stats(value) -> dict:
    """The schema's timing keys, taken from what the judged process reported (nothing else)."""
    return result_schema.conform(value, result_schema.TIMING_STATS_SHAPE)


def _samples(value) -> dict | None:
    """Per-call times for the latency charts, kept only when well-formed (at most 200 per model)."""
    if not isinstance(value, dict):
        return None
    kept = {}
    for side in ("reference", "candidate"):
        times = value.get(side)
        if isinstance(times, list) and all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times):
            kept[side] = [float(t) for t in times[:200]]
    return kept or None


def _faster_than_hardware(nbytes, median_ms, peak_gbps) -> bool:
    """Moving the minimum bytes at the device's peak bandwidth takes at least this long."""
    return bool(nbytes and median_ms and peak_gbps) and nbytes / (peak_gbps * 1e9) > median_ms / 1e3


def fill_judged_parts(
    target: dict, judgement: CandidateJudgement, device: dict, timeout_s: float,
    suspicious_speedup: float = SUSPICIOUS_SPEEDUP,
) -> None:
    """Fill status, flags, correctness, timing, metrics, telemetry, logs and durations of a result
    or of a variant from one judged process."""
    report = judgement.report or {}
    target["status"] = judgement.status
    target["reason"] = judgement.reason
    flags = [f for f in report.get("flags", []) if f in result_schema.FLAGS]

    target["correctness"] = result_schema.conform(report.get("correctness"), result_schema.CORRECTNESS_SHAPE)

    timing = report.get("timing") or {}
    reference, candidate = _stats(timing.get("reference")), _stats(timing.get("candidate"))
    speedup = None
    if reference["median_ms"] and candidate["median_ms"]:
        speedup = reference["median_ms"] / candidate["median_ms"]
    samples = _samples(timing.get("samples"))
    target["timing"] = {"reference": reference, "candidate": candidate, "speedup": speedup, "samples": samples,
                        "confirmation": None,  # the main candidate's: profiler_agent.judge.timing_confirmation
                        "cases": None}  # per input case: profiler_agent.judge.case_judging
    if speedup is not None and speedup > suspicious_speedup:
        flags.append("suspicious_speedup")
    timed_total_ms = report.get("timed_total_ms")
    if isinstance(timed_total_ms, (int, float)) and timed_total_ms > judgement.run.wall_s * 1000:
        flags.append("timer_tampered")  # it claims to have timed longer than it lived
    counted = report.get("metrics") or {}
    if _faster_than_hardware(counted.get("bytes"), candidate["median_ms"], device.get("peak_gbps")):
        flags.append("faster_than_hardware")
    target["flags"] = sorted(set(flags))

    target["metrics"] = metrics.derived_metrics(
        counted.get("flops"), counted.get("bytes"), candidate["median_ms"],
        device.get("peak_gbps"), device.get("peak_tflops"),
    )
    if isinstance(report.get("telemetry"), dict):
        target["telemetry"] = report["telemetry"]
    target["kernels"] = kernel_census.from_report(report.get("kernels"))

    compile_log = judgement.compile_log
    error = report.get("error") or {}
    if judgement.status == "compile_error" and error.get("message"):
        compile_log += "\n" + error["message"]
    target["logs"] = {
        "compile": compile_log,
        "stdout": judgement.run.stdout,
        "stderr": judgement.run.stderr + (report.get("verdict_note") or "") + _harness_note(judgement, timeout_s)
        + judgement.limits_note,
    }
    durations = report.get("durations_s") or {}
    target["durations_s"] = {
        # no report after a compile timeout: the parent's clock says how long the build ran
        "compile": durations.get("compile") if durations.get("compile") is not None else judgement.run.compile_s,
        "correctness": durations.get("correctness"),
        "timing": durations.get("timing"),
        "kernel_census": durations.get("kernel_census"),
        "verify": durations.get("verify"),
        "confirm": None,  # the main candidate's, filled by judge_bundle
        "total": judgement.run.wall_s,
    }


def judge_bundle(bundle: Bundle, options: JudgeOptions) -> dict:
    """Judge `bundle` and return a validated schema-1 result."""
    started = time.monotonic()
    # the folders made for the judging passable and readable by the trusted processes' uid
    # (privileges.trusted_user), whatever umask the agent was started with
    os.umask(0o022)
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31 - 1024)
    # absolute: the judged processes, which build and read the precompiled headers there, run elsewhere
    cache_dir = (Path(options.cache_dir) if options.cache_dir else build_cache.default_cache_dir()).absolute()
    result = result_schema.empty_result()
    sources = snapshot_sources(bundle)
    # every process of the judging, started ahead (judge.warm_pool), taken from the pool when one waits
    slot = warm_pool.POOL.take(options, cache_dir) if options.keep_warm else warm_pool.start_slot(options, cache_dir)
    try:
        confirming = slot.confirming
        beside = None if options.correctness_only else functools.partial(
            timing_confirmation.profile_beside_verification, confirming, bundle, judged_outputs=slot.judged.outputs)
        main = judge_candidate(bundle, bundle.candidate, options, seed, cache_dir, sources, slot.judged,
                               slot.verifier, census_in_child=not (confirming and confirming.profiles()),
                               beside_verification=beside)
        if options.keep_warm and bundle.llm_variant is None and not case_judging.more_cases_to_judge(main):
            # no judged process times anything more: the next profiler imports beside the confirmation
            warm_pool.POOL.start_next_profiler(options, cache_dir)
        reported_device = (main.report or {}).get("device") or {}
        if set(reported_device) == set(result["device"]):
            result["device"] = reported_device
        else:
            result["device"] = device_info.describe_device_without_torch(options.device)
        fill_judged_parts(result, main, result["device"], options.timeout_s, options.suspicious_speedup)
        result["inputs"] = result_schema.conform_inputs((main.report or {}).get("inputs"))
        if slot.warm:
            result["logs"]["stderr"] += WARM_NOTE
        # the times came from a process that ran submission code: bounded here from outside it
        if result["status"] == "passed" and options.device == "cuda":
            options.tell("profiling")
        if options.correctness_only:
            started_ahead.cancel_all(*slot.processes())  # the GPU is the profiler's alone
            case_judging.judge_other_cases(result, main, bundle, options, seed, cache_dir, sources, slot.root,
                                            judge_candidate, fill_judged_parts)
            if options.profile:
                profile_report.add_to_result(result, bundle, options, cache_dir, slot.root / "profile")
            result["logs"]["stderr"] += PROFILE_NOTE if options.profile else CORRECTNESS_ONLY_NOTE
            return _finished(result, options, cache_dir, started, slot)
        confirm_started = time.monotonic()
        timing_confirmation.add_to_result(result, bundle, options, cache_dir, slot.root / "confirm", sources, confirming)
        result["durations_s"]["confirm"] = time.monotonic() - confirm_started
        started_ahead.cancel_all(*slot.processes())  # whatever was not needed ends before anything else starts

        scratch = slot.root
        case_judging.judge_other_cases(result, main, bundle, options, seed, cache_dir, sources, scratch,
                                        judge_candidate, fill_judged_parts)
        if options.ncu:
            options.tell("profiling")
            ncu_profiling.add_to_result(result, bundle, options, cache_dir, scratch / "ncu")

        if bundle.llm_variant is not None:
            judged, verifier = warm_pool.start_pair(options, cache_dir, scratch / "llm")
            llm = judge_candidate(bundle, bundle.llm_variant, options, seed, cache_dir, sources, judged, verifier)
            variant = result_schema.empty_variant()
            fill_judged_parts(variant, llm, result["device"], options.timeout_s, options.suspicious_speedup)
            result["variants"][LLM_VARIANT_NAME.removesuffix(".py")] = variant

        if bundle.self_test is not None:
            options.tell("self_test")
            result["self_test"] = self_test_run.run_self_test(bundle, options, cache_dir, scratch / "self-test")
    finally:  # whatever was not needed (or an error cut short) ends here, with its scratch folder
        slot.close()
    return _finished(result, options, cache_dir, started, slot)


def _finished(result: dict, options: JudgeOptions, cache_dir: Path, started: float, slot) -> dict:
    """The judging's end: its processes gone, the next one's started (keep_warm), the result checked."""
    slot.close()
    if options.keep_warm:
        # the next judging's, started once this one's processes are gone: started beside its
        # verification instead, their imports slowed it as much as they saved (docs/measurement.md)
        warm_pool.POOL.refill(options, cache_dir)
    result["durations_s"]["total"] = time.monotonic() - started
    result_schema.validate_result(result)
    return result


def unjudged_result(device_kind: str, status: str, message: str) -> dict:
    """A result for a bundle that never reached the harness: `internal_error` for the agent's own
    failure (the site retries those), `runtime_error` for a bundle that cannot be judged as given."""
    result = result_schema.empty_result()
    result["status"] = status
    result["reason"] = failure_reasons.message_line(message) or status.replace("_", " ")
    result["device"] = device_info.describe_device_without_torch(device_kind)
    result["logs"]["stderr"] = message
    result_schema.validate_result(result)
    return result
