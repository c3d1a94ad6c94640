"""Measurement: timing (per call and batched), FLOPs and bytes, device telemetry, the kernel census
and Nsight Compute."""
