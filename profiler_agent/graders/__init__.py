"""The processes the agent starts, one module each, run as `python -m profiler_agent.graders.<name>`:
judged_process (runs submission code), verifier and confirmation_check (trusted: the reference only),
self_test (the bundle's run_code.py), profiled_target (what Nsight Compute launches). None of them
imports the worker or reaches the site."""
