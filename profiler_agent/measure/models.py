"""Timing the reference and the candidate, then what the timing does not give: FLOPs, bytes moved,
NVML telemetry, energy per call and peak memory."""

import contextlib
import statistics
import sys

import torch

from profiler_agent.measure import batched_timing, metrics, telemetry, timing
from profiler_agent.devices import device_info
from profiler_agent.harness import tensors
from profiler_agent.harness.guard import SubmissionFailure, guarded, is_device_fault, submission_code
from profiler_agent.harness.tensors import synchronize
from profiler_agent.correctness.trials import make_inputs


def measure(reference, candidate, get_inputs, device, settings: dict, report: dict) -> None:
    stages = timing.Stages()
    inputs = make_inputs(get_inputs, settings["seed"] + 1 + settings["trials"], device)
    ref_inputs, cand_inputs = tensors.fresh_copies(inputs), tensors.fresh_copies(inputs)
    calls = {
        "reference": guarded("reference", lambda: reference(*ref_inputs)),
        "candidate": guarded("candidate", lambda: candidate(*cand_inputs)),
    }
    handle = None
    if device.type == "cuda":
        timer = timing.CudaTimer(device)
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
            timings = timing.time_interleaved(calls, timer, plan)
            stages.end("per-call")
            escaped = False
            if device.type == "cuda":
                timings, escaped = _count_work_left_on_other_streams(calls, timings, timer, device, plan)
                if escaped:
                    report["flags"].append("unsynchronized_work")
                stages.end("synchronized check")
            # work that escapes the end event would escape a batch's too: no batched figure then
            batched = {n: [] for n in calls} if escaped else _time_batches(reference, candidate, inputs, timings, device)
            stages.end("batched")
            if device.type == "cuda":
                # a second of back-to-back candidate calls: NVML's energy counter and power sensor
                # update too slowly for the interleaved region alone, which can last milliseconds
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
        stats["batched_ms"] = batched_timing.median(batched[name])
        stats["overhead_pct"] = batched_timing.overhead_pct(stats["median_ms"], stats["batched_ms"])
    report["timing"]["samples"] = {name: timing.sample(values) for name, values in timings.times_ms.items()}
    # what the parent checks against its own clock: the judged process cannot have timed more
    report["timed_total_ms"] = sum(sum(values) for values in timings.times_ms.values())
    if timings.tampered():
        report["flags"].append("timer_tampered")
    del timer  # frees the L2 flush buffer before memory is measured

    stages.end("energy")
    report["telemetry"] = sampler.telemetry() if device.type == "cuda" else telemetry.empty_telemetry()
    report["telemetry"]["energy_j_per_call"] = energy
    with torch.no_grad(), submission_code("reference"):
        output = reference(*tensors.fresh_copies(inputs))
    report["metrics"]["bytes"] = tensors.tensor_bytes(inputs) + tensors.tensor_bytes([output])
    report["metrics"]["flops"] = metrics.count_flops(reference, tensors.fresh_copies(inputs))
    if device.type == "cuda":
        # the peak that applies depends on the dtype the reference computes in
        report["device"]["peak_tflops"] = device_info.peak_tflops(
            report["device"]["name"], [*inputs, output], settings.get("reference_allows_tf32", False))
    stages.end("bytes and FLOPs")
    if device.type == "cuda":
        del output
        report["telemetry"]["peak_memory_bytes"] = candidate_peak_memory(candidate, cand_inputs, device)
        stages.end("peak memory")
    stages.report()


def _count_work_left_on_other_streams(calls, timings, timer, device, plan):
    """The plain event pair misses work a call leaves on another stream; when a synchronized pair
    sees more, time both models again that way so they are still timed alike."""
    synced = timing.SynchronizedCudaTimer(device)
    escaped = timing.escaped_work_ms(calls, timings, synced)
    if not any(timing.left_work_behind(escaped[n], statistics.median(timings.times_ms[n])) for n in calls):
        return timings, False
    return timing.time_interleaved(calls, synced, plan), True


def _time_batches(reference, candidate, inputs, timings, device) -> dict[str, list[float]]:
    """Per-call times from batches of back-to-back calls on rotating input copies (see batched_timing)."""
    cache_bytes = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 0
    copies = batched_timing.rotation_copies(tensors.tensor_bytes(inputs), cache_bytes)
    plain = {}
    for name, model in (("reference", reference), ("candidate", candidate)):
        copied = [tensors.fresh_copies(inputs) for _ in range(copies)]
        plain[name] = [guarded(name, lambda args=args, model=model: model(*args)) for args in copied]
    rotations = {name: batched_timing.Rotation(calls) for name, calls in plain.items()}
    if device.type == "cuda":
        graphs = {name: batched_timing.graph_rotation(calls) for name, calls in plain.items()}
        if all(graphs.values()):  # both models timed the same way, or neither in graphs
            rotations = graphs
        print(f"[profiler_agent] batched timing: {'CUDA graphs' if rotations is graphs else 'plain calls'}, "
              f"{copies} input copies", file=sys.stderr, flush=True)
    timer = batched_timing.CudaBatchTimer() if device.type == "cuda" else batched_timing.CpuBatchTimer()
    per_call = {name: statistics.median(values) for name, values in timings.times_ms.items()}
    return batched_timing.time_batched(rotations, per_call, timer)


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
