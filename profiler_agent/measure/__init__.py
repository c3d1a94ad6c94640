"""What runs inside the judged process to measure it: timing (per call and batched), the input
sets, FLOPs and bytes, device telemetry, the kernel census. Nothing here runs in the agent's own process
but the pure figures (metrics.derived_metrics, kernel_census.from_report)."""
