"""GPU CodeForces profiler agent: judges kernel bundles, locally or as an RQ worker for the site.

Importing the package is cheap on purpose: torch, rq, redis and requests are imported only by the
modules that need them, so `python -m profiler_agent judge` works with torch alone installed.
"""

__version__ = "0.1.0"

# The version of the judging rules and measurements (not of the package): bump it whenever a result
# for the same bundle could differ, i.e. a change to correctness checks, tolerances, timing method,
# flags or verdict logic (minor: 1.0 -> 1.1), or to the result schema's meaning (major: 1.x -> 2.0).
# Refactors, logs and the service layer leave it alone. A season's `min_harness_version` refuses
# runs to older agents, so a fleet cannot judge one season by two rule sets. Format: numbers and dots.
# 1.1: backward problems, the energy window, the memo and tamper rules, result inputs; 1.2: a candidate
# under its kernel record is ranked at it, the tamper check's wall clock, convolution peaks; 1.3: no
# speedup ranked above the kernel record of both models in one profile (a ratio, not a floor); 1.4:
# timed calls on new values, their outputs checked; 1.5: CPU times bounded by CPU time read from outside;
# 1.6: named input cases (get_cases()), each checked, the speedup the geometric mean of the timed ones';
# 1.7: each timed input case's times confirmed on that case
HARNESS_VERSION = "1.7"
