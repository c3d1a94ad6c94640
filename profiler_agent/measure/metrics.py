"""Work done by one model call (FLOPs, minimum bytes) and the rates derived from a measured time."""

from __future__ import annotations


def count_flops(model, inputs: list) -> int | None:
    """FLOPs of one call as torch's FlopCounterMode counts them; None when it cannot, or counts 0."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    try:
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(*inputs)
        total = int(counter.get_total_flops())
    except Exception:
        return None
    return total or None


# torch dtype name -> the key of the peak table (profiler_agent.devices.peaks) that applies to it
_PEAK_KEYS = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
}


def flops_dtype(values, allow_tf32: bool) -> str | None:
    """Which peak a call's FLOPs count against: the floating-point dtype of its tensors (the
    reference's inputs and outputs). fp32 means the tf32 tensor-core peak when torch lets matmuls use
    TF32. None when there is no floating-point tensor, when they mix dtypes (which unit did the work
    is then unknown), or for a dtype without a peak (float64, complex)."""
    import torch

    from profiler_agent.harness.tensors import flatten

    names = {
        str(t.dtype).removeprefix("torch.")
        for t in flatten(list(values))
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
    }
    if len(names) != 1:
        return None
    key = _PEAK_KEYS.get(names.pop())
    return "tf32" if key == "fp32" and allow_tf32 else key


def derived_metrics(
    flops: int | None,
    nbytes: int | None,
    median_ms: float | None,
    peak_gbps: float | None,
    peak_tflops: float | None,
) -> dict:
    seconds = median_ms / 1e3 if median_ms else None
    tflops = flops / seconds / 1e12 if flops and seconds else None
    gbs = nbytes / seconds / 1e9 if nbytes and seconds else None
    return {
        "flops": flops,
        "bytes": nbytes,
        "tflops": tflops,
        "bandwidth_gbs": gbs,
        "pct_peak_bandwidth": 100.0 * gbs / peak_gbps if gbs and peak_gbps else None,
        "pct_peak_flops": 100.0 * tflops / peak_tflops if tflops and peak_tflops else None,
    }
