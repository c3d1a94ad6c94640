"""Whether a run's times may be ranked: the agent flags `timing_unconfirmed` when it could not confirm
them from outside the judged process (profiler_agent.measure.confirm); such a run stays out of the
standings and of everything ranked from run times until an organizer clears it
(submissions.services.clearing), which replaces the flag with `timing_cleared`."""

UNCONFIRMED = "timing_unconfirmed"
CLEARED = "timing_cleared"


def awaits_clearance(run) -> bool:
    return UNCONFIRMED in (run.flags or [])


def ranks(run) -> bool:
    """A passed run whose times may be ranked (a CPU run's unconfirmed time is no finding: no flag)."""
    return run.verdict == "passed" and not awaits_clearance(run)


def not_profiled_on_cpu(run) -> bool:
    """A CPU run's time: no device profiler confirmed it (shown, never held against the run)."""
    confirmation = ((run.result or {}).get("timing") or {}).get("confirmation") or {}
    return bool(confirmation) and confirmation.get("method") is None and not awaits_clearance(run)
