"""Flags about a run's times.

Whether a run's times may be ranked: the agent flags `timing_unconfirmed` when it could not confirm
them from outside the judged process (profiler_agent.judge.timing_confirmation); such a run stays out of the
standings and of everything ranked from run times until an organizer clears it
(submissions.services.clearing), which replaces the flag with `timing_cleared`.

Whether another host confirmed them: a passed result that would change what the public sees waits
for a second judging on another host (submissions/services/confirming.py), flagged
`awaiting_second_judging`; when the second judging agrees both runs get `second_judging_confirmed`,
when it disagrees or fails the first gets `second_judging_disagrees` until an organizer clears it
(`second_judging_cleared`). A run awaiting or disagreeing stays out of every ranking, like an
unconfirmed time, and its figure is shown to its owner and organizers only.

Whether they were noisy: the site flags `timing_noisy` when the per-call times of the reference or the
candidate spread widely around their median (the harness reports the standard deviation of every
model's calls): the median of such a run is less certain, and another judging may differ a lot. A
noisy run still counts (its median is still the harness's best estimate); the ranked figure, a median
over a submission's runs (ranked_runs), keeps one unlucky run from moving it much.
"""
from django.conf import settings

UNCONFIRMED = "timing_unconfirmed"
CLEARED = "timing_cleared"
NOISY = "timing_noisy"
AWAITING_SECOND = "awaiting_second_judging"
SECOND_CONFIRMED = "second_judging_confirmed"
SECOND_DISAGREES = "second_judging_disagrees"
SECOND_CLEARED = "second_judging_cleared"
# Flags that keep a passed run's figure from the public until another host or an organizer vouches for it.
PROVISIONAL = (AWAITING_SECOND, SECOND_DISAGREES)


def awaits_clearance(run) -> bool:
    return UNCONFIRMED in (run.flags or [])


def is_provisional(run) -> bool:
    """A passed figure one untrusted host vouches for alone (or that a second host contradicted): shown
    to its owner and organizers only, marked, never ranked."""
    return any(f in PROVISIONAL for f in (run.flags or []))


def ranks(run) -> bool:
    """A passed run whose times may be ranked (a CPU run's unconfirmed time is no finding: no flag)."""
    return run.verdict == "passed" and not awaits_clearance(run) and not is_provisional(run)


# the agent's method on the CPU: both models' least times read from outside (profiler_agent.judge.cpu_demonstration)
CPU_TIME = "cpu time"


def not_profiled_on_cpu(run) -> bool:
    """A CPU run's time that nothing confirmed: no device profiler, and too short or too memory-bound
    for the agent to time from outside (shown, never held against the run)."""
    confirmation = ((run.result or {}).get("timing") or {}).get("confirmation") or {}
    unbounded = confirmation.get("method") is None or (confirmation.get("method") == CPU_TIME
                                                         and confirmation.get("confirmed") is None)
    return bool(confirmation) and unbounded and not awaits_clearance(run)


def spread_percent(result) -> dict:
    """{"reference": %, "candidate": %}: each model's standard deviation of its per-call times as a
    share of their median, where the result has both."""
    timing = (result or {}).get("timing") or {}
    spreads = {}
    for side in ("reference", "candidate"):
        stats = timing.get(side) or {}
        median, std = stats.get("median_ms"), stats.get("std_ms")
        if median and std is not None:
            spreads[side] = 100.0 * std / median
    return spreads


def is_noisy(result) -> bool:
    return any(p > settings.TIMING_NOISY_SPREAD_PERCENT for p in spread_percent(result).values())


def with_noise_flag(result, flags) -> list:
    """The run's flags with `timing_noisy` added where a passed result's timing was noisy."""
    flags = [f for f in flags if f != NOISY]
    if (result or {}).get("status") == "passed" and is_noisy(result):
        flags.append(NOISY)
    return flags
