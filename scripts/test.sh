#!/usr/bin/env bash
# Runs the test suite: installs what it needs, makes sure Redis answers, then pytest.
# DATABASE_URL picks the database (SQLite by default; postgres://... for PostgreSQL).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mkdir -p var/staticfiles
STARTED_PIDS=()
trap stop_started EXIT

setup_venv "site,agent,dev"
ensure_redis
export REDIS_URL
exec_status=0
"$PY" -m pytest "$@" || exec_status=$?
exit $exec_status
