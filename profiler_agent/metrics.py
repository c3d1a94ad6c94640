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
