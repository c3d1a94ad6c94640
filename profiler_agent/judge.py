"""Judging a bundle: the candidate, the LLM variant and the self-test, each in its own sandboxed
process, assembled into one schema-1 result."""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from profiler_agent import build_cache, device_info, metrics, schema
from profiler_agent.bundle import Bundle, LLM_VARIANT_NAME
from profiler_agent.child_env import child_env
from profiler_agent.logcap import read_capped
from profiler_agent.sandbox import SandboxRun, run_sandboxed
from profiler_agent.verdicts import classify

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_TRIALS = 3
# Far beyond what tuning one kernel usually buys; an organizer takes a look, the verdict stands.
SUSPICIOUS_SPEEDUP = 20.0


@dataclass
class JudgeOptions:
    device: str = "cpu"
    timeout_s: float = DEFAULT_TIMEOUT_S  # per judged process (compile included)
    memory_limit_bytes: int | None = None  # address-space limit, CPU only
    cache_dir: Path | None = None
    seed: int | None = None  # None: a fresh secret seed per judgement
    atol: float | None = None  # None: the per-dtype default
    rtol: float | None = None
    trials: int = DEFAULT_TRIALS


@dataclass
class CandidateJudgement:
    status: str
    report: dict | None
    run: SandboxRun
    compile_log: str


def _parse_report(data: bytes | None) -> dict | None:
    if not data:
        return None
    try:
        # a NaN that slipped through becomes null: JSON has no NaN
        report = json.loads(data, parse_constant=lambda _: None)
    except (ValueError, UnicodeDecodeError):
        return None
    return report if isinstance(report, dict) else None


def _fresh_dirs(scratch: Path, bundle: Bundle) -> tuple[Path, Path, Path]:
    """A private copy of the bundle (submission code may write to its cwd), an empty home, a tmp."""
    workdir, home, tmp = scratch / "bundle", scratch / "home", scratch / "tmp"
    shutil.copytree(bundle.root, workdir)
    home.mkdir()
    tmp.mkdir()
    return workdir, home, tmp


def judge_candidate(
    bundle: Bundle, candidate: Path, options: JudgeOptions, seed: int, cache_dir: Path, scratch: Path
) -> CandidateJudgement:
    scratch.mkdir(parents=True)
    workdir, home, tmp = _fresh_dirs(scratch, bundle)
    extensions = build_cache.extensions_dir(cache_dir, candidate, options.device)
    extensions.mkdir(parents=True, exist_ok=True)
    compile_log = scratch / "compile.log"
    command = [
        sys.executable, "-m", "profiler_agent.child",
        "--bundle", str(workdir),
        "--reference", bundle.reference.name,
        "--candidate", candidate.name,
        "--device", options.device,
        "--compile-log", str(compile_log),
    ]
    settings = {
        "seed": seed,
        "trials": options.trials,
        "atol": options.atol,
        "rtol": options.rtol,
        # an address-space limit breaks CUDA, whose context reserves tens of GB of it
        "memory_limit_bytes": options.memory_limit_bytes if options.device == "cpu" else None,
    }
    run = run_sandboxed(
        command,
        cwd=workdir,
        env=child_env(home, tmp, extensions),
        timeout_s=options.timeout_s,
        logs_dir=scratch / "logs",
        stdin_data=json.dumps(settings).encode(),
        result_pipe=True,
    )
    report = _parse_report(run.report)
    return CandidateJudgement(classify(run, report), report, run, read_capped(compile_log))


def _harness_note(judgement: CandidateJudgement, timeout_s: float) -> str:
    run = judgement.run
    if run.timed_out:
        return f"[profiler_agent] timed out after {timeout_s:g} s; the process and its children were killed\n"
    if judgement.report is None:
        return f"[profiler_agent] the judged process ended (exit code {run.exit_code}) without a report\n"
    return ""


def _stats(value) -> dict:
    return value if isinstance(value, dict) else schema.empty_timing_stats()


def fill_judged_parts(target: dict, judgement: CandidateJudgement, device: dict, timeout_s: float) -> None:
    """Fill status, flags, correctness, timing, metrics, telemetry, logs and durations of a result
    or of a variant from one judged process."""
    report = judgement.report or {}
    target["status"] = judgement.status
    flags = [f for f in report.get("flags", []) if f in schema.FLAGS]

    correctness = report.get("correctness") or {}
    for key in target["correctness"]:
        target["correctness"][key] = correctness.get(key)

    timing = report.get("timing") or {}
    reference, candidate = _stats(timing.get("reference")), _stats(timing.get("candidate"))
    speedup = None
    if reference["median_ms"] and candidate["median_ms"]:
        speedup = reference["median_ms"] / candidate["median_ms"]
    target["timing"] = {"reference": reference, "candidate": candidate, "speedup": speedup}
    if speedup is not None and speedup > SUSPICIOUS_SPEEDUP:
        flags.append("suspicious_speedup")
    target["flags"] = sorted(set(flags))

    counted = report.get("metrics") or {}
    target["metrics"] = metrics.derived_metrics(
        counted.get("flops"), counted.get("bytes"), candidate["median_ms"],
        device.get("peak_gbps"), device.get("peak_tflops"),
    )
    if isinstance(report.get("telemetry"), dict):
        target["telemetry"] = report["telemetry"]

    compile_log = judgement.compile_log
    error = report.get("error") or {}
    if judgement.status == "compile_error" and error.get("message"):
        compile_log += "\n" + error["message"]
    target["logs"] = {
        "compile": compile_log,
        "stdout": judgement.run.stdout,
        "stderr": judgement.run.stderr + _harness_note(judgement, timeout_s),
    }
    durations = report.get("durations_s") or {}
    target["durations_s"] = {
        "compile": durations.get("compile"),
        "correctness": durations.get("correctness"),
        "timing": durations.get("timing"),
        "total": judgement.run.wall_s,
    }


def run_self_test(bundle: Bundle, options: JudgeOptions, cache_dir: Path, scratch: Path) -> dict:
    """Run the contestant's run_code.py in the same sandbox: informative only, never scored."""
    scratch.mkdir(parents=True)
    workdir, home, tmp = _fresh_dirs(scratch, bundle)
    # the candidate's build folder: run_code.py usually imports the candidate, whose build is there
    extensions = build_cache.extensions_dir(cache_dir, bundle.candidate, options.device)
    extensions.mkdir(parents=True, exist_ok=True)
    run = run_sandboxed(
        [sys.executable, bundle.self_test.name],
        cwd=workdir,
        env=child_env(home, tmp, extensions),
        timeout_s=options.timeout_s,
        logs_dir=scratch / "logs",
        merge_stderr=True,
    )
    output = run.stdout
    if run.timed_out:
        output += f"\n[profiler_agent] timed out after {options.timeout_s:g} s\n"
    return {"exit_code": run.exit_code, "output": output}


def judge_bundle(bundle: Bundle, options: JudgeOptions) -> dict:
    """Judge `bundle` and return a validated schema-1 result."""
    started = time.monotonic()
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31 - 1024)
    cache_dir = Path(options.cache_dir) if options.cache_dir else build_cache.default_cache_dir()
    result = schema.empty_result()
    with tempfile.TemporaryDirectory(prefix="profiler-agent-", ignore_cleanup_errors=True) as tmp:
        scratch = Path(tmp)
        main = judge_candidate(bundle, bundle.candidate, options, seed, cache_dir, scratch / "candidate")
        reported_device = (main.report or {}).get("device") or {}
        if set(reported_device) == set(result["device"]):
            result["device"] = reported_device
        else:
            result["device"] = device_info.describe_device_without_torch(options.device)
        fill_judged_parts(result, main, result["device"], options.timeout_s)

        if bundle.llm_variant is not None:
            llm = judge_candidate(bundle, bundle.llm_variant, options, seed, cache_dir, scratch / "llm")
            variant = schema.empty_variant()
            fill_judged_parts(variant, llm, result["device"], options.timeout_s)
            result["variants"][LLM_VARIANT_NAME.removesuffix(".py")] = variant

        if bundle.self_test is not None:
            result["self_test"] = run_self_test(bundle, options, cache_dir, scratch / "self-test")
    result["durations_s"]["total"] = time.monotonic() - started
    schema.validate_result(result)
    return result


def unjudged_result(device_kind: str, status: str, message: str) -> dict:
    """A result for a bundle that never reached the harness: `internal_error` for the agent's own
    failure (the site retries those), `runtime_error` for a bundle that cannot be judged as given."""
    result = schema.empty_result()
    result["status"] = status
    result["device"] = device_info.describe_device_without_torch(device_kind)
    result["logs"]["stderr"] = message
    schema.validate_result(result)
    return result
