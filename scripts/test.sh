#!/usr/bin/env bash
# Runs the test suite: installs what it needs, makes sure Redis answers, then pytest.
# DATABASE_URL picks the database (SQLite by default; postgres://... for PostgreSQL).
# PYTEST_WORKERS: how many test processes (pytest-xdist; default one more than the cores, 0 or 1 for none).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mkdir -p var/staticfiles
STARTED_PIDS=()
trap stop_started EXIT

setup_venv "site,agent,dev" prepare_test_header
ensure_redis
export REDIS_URL
# The import rules first (pyproject.toml's [tool.importlinter]: the agent's layers, no Django in the
# agent, no torch in the site): a broken one fails the run before any test starts.
log "checking the import rules (lint-imports)"
"$VENV/bin/lint-imports" --no-cache
# --dist loadfile: a test module runs whole, in order, on one worker, so what its tests share (a module
# fixture's build or judging, a browser) is made once. Builds are shared by the workers besides
# (tests/agent/conftest.py's build_cache). Not loadgroup: pytest-xdist 3.8's xdist_group marks do
# nothing under pytest 9.2 (they rename item._nodeid, which pytest 9.2 no longer reads).
# One more than the cores: a test waiting on its processes (a sleep, a poll, a site starting) leaves a
# core to the extra one (docs/performance.md: 2 cores, the SQLite pass 5m35s with 2, 4m58s with 3).
workers="${PYTEST_WORKERS:-$(( $(nproc) + 1 ))}"
parallel=()
# --no-loadscope-reorder: the modules go in tests/conftest.py's order (longest first), not xdist's (most tests first)
if [ "$workers" -gt 1 ]; then parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder); fi
exec_status=0
"$PY" -m pytest ${parallel[@]+"${parallel[@]}"} "$@" || exec_status=$?
exit $exec_status
