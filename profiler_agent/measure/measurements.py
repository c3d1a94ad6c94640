"""Timing the reference and the candidate, then what the timing does not give: FLOPs, bytes moved,
NVML telemetry, energy per call and peak memory."""

import contextlib
import statistics
import sys

import torch

from profiler_agent.measure import input_sets, memory_budget, metrics, telemetry, timed_outputs, timing
from profiler_agent.measure import batched_pass, batch_timers
from profiler_agent.devices import device_info
from profiler_agent.util import tensors
from profiler_agent.util.submission_failures import SubmissionFailure, guarded, is_device_fault, submission_code
from profiler_agent.util.tensors import synchronize
from profiler_agent.trials.input_draws import make_inputs
from profiler_agent.util.sizes import format_size


def log(message: str) -> None:
    print(f"[profiler_agent] timing: {message}", file=sys.stderr, flush=True)


def measure(reference, candidate, get_inputs, device, settings: dict, report: dict, outputs_dir) -> None:
    """Times both models (a wrong timed output ends it as a wrong answer, naming the call) and fills
    the report's timing, metrics and telemetry."""
    try:
        _measure(reference, candidate, get_inputs, device, settings, report, outputs_dir)
    except timed_outputs.WrongTimedOutput as wrong:
        report["correctness"].update(passed=False, reason=str(wrong))
        log(f"wrong answer: {wrong}; the timing stops here")


def _measure(reference, candidate, get_inputs, device, settings: dict, report: dict, outputs_dir) -> None:
    stages = timing.Stages()
    models = {"reference": reference, "candidate": candidate}
    first_seed = settings["seed"] + 1 + settings["trials"]
    cache_bytes = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 0
    budget = memory_budget.harness_budget(device, settings.get("memory_limit_bytes"))
    flush_bytes = min(timing.L2_FLUSH_BYTES, budget.bytes) if device.type == "cuda" else 0
    first = make_inputs(get_inputs, first_seed, device)
    set_bytes = tensors.tensor_bytes(first)
    wanted_copies = batch_timers.rotation_copies(set_bytes, cache_bytes)
    per_model, keeps_bases = input_sets.plan_sets(set_bytes, budget.bytes - flush_bytes,
                                                  max(input_sets.TIMING_SETS, wanted_copies))
    sets = input_sets.draw_sets(get_inputs, first, first_seed, device, per_model, keep_bases=keeps_bases)
    del first
    fresh = {name: input_sets.FreshInputs(sets[name], sets.get("bases"), settings["seed"]) for name in models}
    _log_memory_plan(budget, flush_bytes, cache_bytes, set_bytes, per_model, keeps_bases)
    outputs = timed_outputs.TimedOutputs(settings["seed"], settings, reference, outputs_dir,
                                         lambda: (fresh["candidate"].calls, fresh["candidate"].draw))
    calls = {name: guarded(name, lambda model=model, inputs=fresh[name], name=name: outputs.keep(name, model(*inputs.args)))
             for name, model in models.items()}

    def advance(name):  # outside the timed region: the last output goes, the next call's values come
        outputs.release(name)
        fresh[name].advance()

    handle = None
    if device.type == "cuda":
        timer = timing.CudaTimer(device, flush_bytes=flush_bytes)
        handle = device_info.judged_gpu()  # NVML or MetaX view of the device; None when neither sees it
        sampler = telemetry.TelemetrySampler(handle)
    else:
        timer = timing.CpuTimer()
        sampler = contextlib.nullcontext()
    energy = None
    stages.end("setup")
    try:
        with torch.no_grad(), sampler:
            plan = timing.TimingPlan.from_settings(settings.get("timing"))
            control = (lambda: None) if device.type == "cuda" else None
            timings = timing.time_interleaved(calls, timer, plan, prepare=advance, control=control,
                                              after_round=outputs.after_round)
            stages.end("per-call")
            escaped = False
            if device.type == "cuda":
                timings, timer, escaped = _time_again_if_work_escaped(calls, timings, timer, device, plan, advance,
                                                                      outputs.after_round)
                if escaped:
                    report["flags"].append("unsynchronized_work")
                stages.end("work outside the pair")
            # the raw pair against the wall clock; the figures reported are net of the pair's floor
            tampered = timings.tampered()
            if timings.control_ms and not escaped:  # the synchronized timer subtracts its own
                log(f"the event pair's own time (an empty call): {timings.floor_ms():.4f} ms, "
                    "subtracted from every call")
                timings = timings.without_floor()
            log(f"timed outputs: {outputs.checked} of {outputs.rounds} rounds compared with the reference's, "
                f"{len(outputs.saved)} saved for the verifier"
                + ("" if keeps_bases else " (none: values made in place cannot be made again)"))
            if any(f.kept_values for f in fresh.values()):
                log("inputs at positions " + ", ".join(map(str, fresh["candidate"].kept_values))
                    + " are expanded views: they keep their drawn values")
            outputs.release_all()
            fresh_medians = {name: statistics.median(values) for name, values in timings.times_ms.items()}
            fresh_beside, repeated = _time_repeated_inputs(calls, fresh, timer, plan)
            log("repeated input set (fastest ms): " + _compare_fastest(fresh_beside, repeated))
            # a busy host can slow every fresh call of a short pass: decided on the fastest of up to
            # MEMO_PASSES passes, which a memo's gain survives and passes slowed by chance do not (CI's
            # two loaded cores once flagged an honest ReLU against the same ReLU after two)
            for _ in range(input_sets.MEMO_PASSES - 1):
                if not input_sets.input_memoized(fresh_beside, repeated):
                    break
                again_fresh, again_repeated = _time_repeated_inputs(calls, fresh, timer, plan)
                log("again (fastest ms): " + _compare_fastest(again_fresh, again_repeated))
                fresh_beside = {name: min(ms, again_fresh[name]) for name, ms in fresh_beside.items()}
                repeated = {name: min(ms, again_repeated[name]) for name, ms in repeated.items()}
            if input_sets.input_memoized(fresh_beside, repeated):
                report["flags"].append("input_memoized")
            stages.end("repeated inputs")
            # work that escapes the end event would escape a batch's too: no batched figure then
            batched = {n: [] for n in calls}
            if escaped:
                batched_pass.log("none: the calls leave work outside the event pair")
            elif wanted_copies > 1 and per_model < 2:
                batched_pass.log(f"none: the memory budget allows one input set per model, the cache "
                                 f"needs {wanted_copies}")
            else:
                copies = min(per_model, wanted_copies)
                room = budget.bytes - flush_bytes - 2 * (per_model - 1) * set_bytes
                batched = batched_pass.time_batches(models, sets, copies, fresh_medians, device, room,
                                                    settings, report["device"].get("peak_gbps"))
            stages.end("batched")
            if device.type == "cuda":
                # back-to-back candidate calls across steps of NVML's energy counter (0.3 s or more):
                # it updates too slowly for the interleaved region alone, which can last milliseconds
                energy = telemetry.energy_per_call_j(
                    calls["candidate"], lambda: synchronize(device), timing.now_s, handle
                )
    except SubmissionFailure:
        raise
    except Exception as exc:
        if is_device_fault(exc):
            raise SubmissionFailure("timing", exc) from exc
        raise
    report["timing"] = {name: timing.summarize(values) for name, values in timings.times_ms.items()}
    for name, stats in report["timing"].items():
        stats["batched_ms"] = batch_timers.median(batched[name])
        stats["overhead_pct"] = batch_timers.overhead_pct(stats["median_ms"], stats["batched_ms"])
    report["timing"]["samples"] = {name: timing.sample(values) for name, values in timings.times_ms.items()}
    # what the parent checks against its own clock: the judged process cannot have timed more
    report["timed_total_ms"] = sum(sum(values) for values in timings.times_ms.values())
    if tampered:
        report["flags"].append("timer_tampered")
    outputs.release_all()
    del timer, calls, advance, fresh, sets, outputs  # frees the L2 flush buffer and the input sets before memory is measured

    stages.end("energy")
    report["telemetry"] = sampler.telemetry() if device.type == "cuda" else telemetry.empty_telemetry()
    report["telemetry"]["energy_j_per_call"] = energy
    stages.end("telemetry")
    inputs = make_inputs(get_inputs, first_seed, device)
    with torch.no_grad(), submission_code("reference"):
        output = reference(*tensors.fresh_copies(inputs))
    report["metrics"]["bytes"] = tensors.tensor_bytes(inputs) + tensors.tensor_bytes([output])
    flops, convolution_share = metrics.count_flops_and_convolution_share(reference, tensors.fresh_copies(inputs))
    report["metrics"]["flops"] = flops
    if device.type == "cuda":
        # the peak that applies depends on the dtype the reference computes in, and on TF32
        allow_tf32 = metrics.tf32_allowed(settings.get("reference_allows_tf32", False),
                                          settings.get("reference_allows_tf32_convolution", False), convolution_share)
        report["device"]["peak_tflops"] = device_info.peak_tflops(report["device"]["name"], [*inputs, output], allow_tf32)
    stages.end("bytes and FLOPs")
    if device.type == "cuda":
        del output
        report["telemetry"]["peak_memory_bytes"] = candidate_peak_memory(candidate, inputs, device)
        stages.end("peak memory")
    stages.report()


def _log_memory_plan(budget, flush_bytes, cache_bytes, set_bytes, per_model, keeps_bases) -> None:
    log(f"harness memory budget {memory_budget.describe(budget)}")
    if cache_bytes and flush_bytes < 2 * cache_bytes:
        log(f"the L2 flush buffer ({format_size(flush_bytes)}) is under twice the L2 cache "
            f"({format_size(cache_bytes)}): calls may start partly warm")
    if keeps_bases:
        log(f"{per_model} input set(s) per model ({format_size(set_bytes)} each) and "
            f"{min(per_model, input_sets.DISTINCT_DRAWS)} kept as drawn: each call's values are a draw's, each "
            f"floating-point value times its own factor within {input_sets.JITTER:g} of 1, from the secret seed")
    elif per_model == 1:
        log(f"one input set per model ({format_size(set_bytes)} each; the budget allows no other): its "
            "floating-point values are rescaled in place between calls (new data, new _version)")
    else:
        log(f"{per_model} input sets per model ({format_size(set_bytes)} each), rotated; each use bumps "
            "the set's _version")


def _time_again_if_work_escaped(calls, timings, timer, device, plan, advance, after_round):
    """The plain pair cannot see work a call runs on another stream during the L2 flush or after
    the end event; when its own readings show such work (timing.work_outside_ms), both models are
    timed again with the flush waited for and the end after a device-wide synchronize."""
    outside = timing.work_outside_ms(timings)
    medians = {name: statistics.median(values) for name, values in timings.times_ms.items()}
    log("work outside the event pair (ms): " + ", ".join(f"{n} {outside[n]:.4f}" for n in calls)
        + f" (medians in ms: {timing.outside_readings(timings)})")
    empty = [n for n in calls if timings.control_ms and timing.pair_held_no_work(medians[n], timings.control_median_ms())]
    if not empty and not any(timing.left_work_behind(outside[n], medians[n]) for n in calls):
        return timings, timer, False
    synced = timing.SynchronizedCudaTimer(device, flush_buffer=timer.flush_buffer)
    log("timed again with the flush waited for and a device-wide synchronize before the end event"
        + (f" ({', '.join(empty)}: no more than an empty call between the events)" if empty else ""))
    again = timing.time_interleaved(calls, synced, plan, prepare=advance, after_round=after_round)
    if not any(timing.left_work_behind(outside[n], medians[n]) for n in calls):
        # only an empty pair asked: work found once the device is waited for ran outside it
        found = [n for n in empty if statistics.median(again.times_ms[n]) > timing.NO_WORK_MS]
        if not found:
            log("nothing ran outside the pair: the call does no device work")
            return timings, timer, False
    return again, synced, True


REPEATED = " (repeated input)"


def _time_repeated_inputs(calls, fresh, timer, plan) -> tuple[dict[str, float], dict[str, float]]:
    """A short pass in which each model's call on its next input set is followed by a call on the
    same set again (same data, same _version): what a forward that remembers outputs for repeated
    inputs gains. Fresh and repeated calls alternate within each round, so a change in the host's
    load hits both alike. Returns the fresh and the repeated fastest calls: a busy host only ever
    adds time, and with a few calls each a median took that noise in (CI under load once read a
    memo's 10x gain as 2.3x, and the reference's as 1.5x)."""
    both = {}
    for name, call in calls.items():
        both[name] = call
        both[name + REPEATED] = call  # no prepare before it: the set the call before it saw
    # every round the budget allows, up to 15: the fastest of a few calls is what a quiet moment
    # gives, and a settled median says nothing of it
    short = timing.TimingPlan(warmup=1, min_runs=5, max_runs=15, target_rse=0.0,
                              budget_s=min(plan.budget_s / 4, 1.0))
    prepare = lambda name: None if name.endswith(REPEATED) else fresh[name].advance()  # noqa: E731
    timings = timing.time_interleaved(both, timer, short, prepare=prepare)
    fastest = {name: min(values) for name, values in timings.times_ms.items()}
    return ({name: fastest[name] for name in calls}, {name: fastest[name + REPEATED] for name in calls})


def _compare_fastest(fresh: dict[str, float], repeated: dict[str, float]) -> str:
    return ", ".join(f"{name} {repeated[name]:.4f} against {fresh[name]:.4f} on fresh ones "
                     f"({input_sets.gain(fresh[name], repeated[name]):.2f}x)" for name in fresh)


def candidate_peak_memory(candidate, inputs: list, device) -> int:
    """Peak device memory of one candidate call: its parameters and inputs, plus the most it
    allocated during the call (outputs, workspace). The harness's own buffers are left out."""
    synchronize(device)
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad(), submission_code("candidate"):
        candidate(*inputs)
        synchronize(device)
    during = torch.cuda.max_memory_allocated() - before
    held = tensors.tensor_bytes(inputs) + tensors.tensor_bytes(list(candidate.parameters()))
    held += tensors.tensor_bytes(list(candidate.buffers()))
    return held + during
