"""Kept for one wire name only: the job function's (service/jobs.py). The agent's worker is profiler_agent.worker."""
