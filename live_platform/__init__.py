"""Starts the platform on this machine for the tests, the benches and scripts/platform.sh: the site under
gunicorn, Redis, `manage.py` helpers (the sweeper, the site's worker) and profiler agents, each a real
process in a group of its own, on free ports.

- ports.free_port: the one free-port helper (`python -m live_platform.ports` for bash)
- gunicorn_site.GunicornSite: the site as scripts/platform.sh runs it (`python -m live_platform.gunicorn_site wait URL`)
- agents.AgentProcess, agents.wait_for_runs: a CPU agent and the verdicts it gives
- redis_server.RedisServer: a redis-server of a run's own
- proxy.CuttableProxy: a link to the site that can be cut
- database.Database: a fresh database of a run's own
- whole_platform.Platform: all of it with a contest to submit to (the fleet benches)
- seed_contest: a contest to submit to in a database a site of its own serves (`python -m live_platform.seed_contest`)

Not named `platform`: a script run from a folder holding a platform.py would shadow the standard
library's `platform`, which redis, rq and torch import.
"""
import importlib

# Loaded on first use: `python -m live_platform.ports` (bash) imports nothing else.
_MODULE_OF = {
    "AgentProcess": "agents", "wait_for_runs": "agents", "Database": "database", "is_postgres": "database",
    "GunicornSite": "gunicorn_site", "free_port": "ports", "PY": "processes", "ROOT": "processes",
    "ServiceProcess": "processes", "make_log": "processes", "stop_process_group": "processes",
    "CuttableProxy": "proxy", "RedisServer": "redis_server", "Platform": "whole_platform",
}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'live_platform' has no attribute {name!r}")
    return getattr(importlib.import_module(f"live_platform.{_MODULE_OF[name]}"), name)
