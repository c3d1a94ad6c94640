"""GPU CodeForces profiler agent: judges kernel bundles, locally or as an RQ worker for the site.

Importing the package is cheap on purpose: torch, rq, redis and requests are imported only by the
modules that need them, so `python -m profiler_agent judge` works with torch alone installed.
"""

__version__ = "0.1.0"
