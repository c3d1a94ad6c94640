"""The agent's process judging one bundle: its options, the processes it starts (ahead of their
turn, pooled), the verdict and its reason, the timing confirmation and Nsight Compute, the result."""
