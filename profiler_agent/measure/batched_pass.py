"""Batched timing of both models on the timing's own input sets (see batched_timing): how many
copies, CUDA graphs or plain calls, and every choice said in the judged process's stderr."""

from __future__ import annotations

import statistics
import sys

import torch

from profiler_agent.util import tensors
from profiler_agent.util.submission_failures import guarded
from profiler_agent.measure import batch_timers
from profiler_agent.util.sizes import format_size


def log(message: str) -> None:
    print(f"[profiler_agent] batched timing: {message}", file=sys.stderr, flush=True)


def time_batches(models: dict, sets: dict[str, list[list]], copies: int, per_call_ms: dict[str, float],
                 device, room_bytes: int, settings: dict, peak_gbps) -> dict[str, list[float]]:
    """Per-call times from batches of back-to-back calls cycling through `copies` input sets per
    model; {name: []} (no figure) when the calls could not be timed that way."""
    plain = {
        name: [guarded(name, lambda args=args, model=model: model(*args)) for args in sets[name][:copies]]
        for name, model in models.items()
    }
    rotations = {name: batch_timers.Rotation(calls) for name, calls in plain.items()}
    how = "plain calls"
    if device.type == "cuda":
        graphs, why = _graph_rotations(plain, sets, copies, room_bytes, settings)
        if graphs is not None:
            rotations, how = graphs, "CUDA graphs"
        else:
            log(f"plain calls, not CUDA graphs: {why}")
    timer = batch_timers.CudaBatchTimer() if device.type == "cuda" else batch_timers.CpuBatchTimer()
    per_call = batch_timers.time_batched(rotations, per_call_ms, timer)
    if how == "CUDA graphs":
        nbytes = _call_bytes(plain, sets)
        implausible = [n for n, t in per_call.items()
                       if batch_timers.faster_than_possible(batch_timers.median(t), nbytes[n], peak_gbps)]
        if implausible:
            log(f"the graph replays of {', '.join(implausible)} ran faster than the bytes they move allow "
                "at peak bandwidth: refused, plain calls timed instead")
            rotations, how = {name: batch_timers.Rotation(calls) for name, calls in plain.items()}, "plain calls"
            per_call = batch_timers.time_batched(rotations, per_call_ms, timer)
    log(f"{how}, {copies} input set(s) per model")
    return per_call


def _call_bytes(plain: dict, sets: dict) -> dict[str, int]:
    """Inputs plus outputs of one plain call per model: the least a call moves."""
    out = {}
    for name, calls in plain.items():
        output = calls[0]()
        out[name] = tensors.tensor_bytes(sets[name][0]) + tensors.tensor_bytes([output])
    return out


def _graph_rotations(plain: dict, sets: dict, copies: int, room_bytes: int, settings: dict):
    """Both models in CUDA graphs, or (None, why): both are timed the same way or neither in graphs."""
    output_bytes = sum(tensors.tensor_bytes([calls[0]()]) for calls in plain.values())
    torch.cuda.synchronize()
    if output_bytes * copies > room_bytes:
        return None, (f"the graphs' outputs ({format_size(output_bytes * copies)}) would exceed the "
                      f"harness's memory budget left ({format_size(max(room_bytes, 0))})")
    graphs = {}
    for name, calls in plain.items():
        rotation, why = batch_timers.graph_rotation(calls, sets[name][:copies],
                                                      settings.get("atol"), settings.get("rtol"))
        if rotation is None:
            return None, f"{name}: {why}"
        graphs[name] = rotation
    return graphs, "captured"


def median_per_call(times_ms: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in times_ms.items()}
