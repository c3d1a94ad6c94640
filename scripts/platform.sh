#!/usr/bin/env bash
# Runs the whole platform locally: site (gunicorn), queue (Redis), a local profiler agent, demo data.
# Settings come from the environment (DATABASE_URL, REDIS_URL, SECRET_KEY, PORT, ...). Ctrl-C stops all:
# the agents finish the runs they judge first (Ctrl-C again: at once).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mkdir -p var
STARTED_PIDS=() AGENT_PIDS=()
trap 'log "stopping"; stop_started' EXIT
trap 'exit 130' INT TERM

setup_venv "site,agent"
ensure_redis
export REDIS_URL
PORT="${PORT:-8000}"
export SITE_URL="${SITE_URL:-http://127.0.0.1:$PORT}"
export ALLOWED_HOSTS="${ALLOWED_HOSTS:-localhost,127.0.0.1,[::1]}"
platform_namespace
log "this platform's queues on $REDIS_URL: ${GPU_QUEUE_PREFIX}<GPU type> and $SITE_QUEUE_NAME, its agents' Redis users"
log "${AGENT_REDIS_USER_PREFIX}<agent> (named after its database: another database gets others; GPU_QUEUE_PREFIX,"
log "SITE_QUEUE_NAME and AGENT_REDIS_USER_PREFIX choose them)"

log "migrating the database"
"$PY" manage.py migrate --noinput -v0
"$PY" manage.py collectstatic --noinput -v0

gpu_args=() gpu_slug=""
if command -v nvidia-smi >/dev/null && gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" && [ -n "$gpu_name" ]; then
  gpu_slug="$(echo "$gpu_name" | tr 'A-Z' 'a-z' | grep -oE '[a-z][0-9]{2,4}[a-z]?' | head -1 || true)"
  gpu_slug="${gpu_slug:-cuda}"
  gpu_args=(--gpu-type "$gpu_slug:$gpu_name")
fi
if [ -z "$gpu_slug" ]; then
  log "no NVIDIA GPU found: this machine judges CPU bundles only (like examples/relu-cpu); a bundle that needs"
  log "CUDA (like examples/001-example) is refused on season S1, which is then judged on CPU alone"
fi

log "starting the site on $SITE_URL"
# setsid: in a session of its own, Ctrl-C does not reach the site or the agents; stop_started stops
# the agents first (each finishes the run it judges and reports it), then the site (scripts/lib.sh).
setsid "$VENV/bin/gunicorn" -c deploy/gunicorn.conf.py config.wsgi &
STARTED_PIDS+=($!)
"$PY" -m live_platform.gunicorn_site wait "$SITE_URL/" --timeout 20 || log "the site is slow to answer; going on"

# The site's own queue lives in SITE_REDIS_URL (default: database 1 of REDIS_URL's server), where the
# agents' Redis user cannot go; jobs there are JSON, never pickles.
log "starting the site's own worker (pull-request intake, PR comments and their retries)"
"$PY" manage.py rqworker "$SITE_QUEUE_NAME" --with-scheduler --serializer rq.serializers.JSONSerializer &
STARTED_PIDS+=($!)
# Lost runs (a crashed agent, a job Redis lost) go back to the queue within a minute even when no
# agent calls in: agents' heartbeats sweep too, at most once per SWEEP_INTERVAL_SECONDS site-wide.
log "starting the sweeper of lost runs"
"$PY" manage.py sweep_runs --loop &
STARTED_PIDS+=($!)

# The local agents get what a volunteer's GPU host would: a token for the GPU types the site grants
# them, and a Redis ACL user that reaches this platform's GPU queues only.
agent_types=(--gpu-type cpu)
[ -n "$gpu_slug" ] && agent_types+=(--gpu-type "$gpu_slug:$gpu_name")
# The local platform has this one host: the organizer's own, trusted (no second judging: docs/architecture.md).
token="$("$PY" manage.py create_agent local "${agent_types[@]}" --no-redis-user --quiet --trusted)"
agent_redis_url="$REDIS_URL"
acl_status=0
acl_url="$("$PY" manage.py agent_redis_user local --quiet)" || acl_status=$?
if [ "$acl_status" -eq 0 ]; then
  agent_redis_url="$acl_url"
  log "the local agents use their own Redis ACL user (${AGENT_REDIS_USER_PREFIX}local)"
elif [ "$acl_status" -eq 3 ]; then
  log "this Redis has no ACL selectors (older than 7): the local agents get REDIS_URL itself"
else
  log "could not make the agents' Redis user (see above)"; exit 1
fi
log "starting a local profiler agent on queue ${GPU_QUEUE_PREFIX}cpu"
REDIS_URL="$agent_redis_url" setsid "$PY" -m profiler_agent work --site "$SITE_URL" --token "$token" --queue "${GPU_QUEUE_PREFIX}cpu" --device cpu --name local-cpu &
STARTED_PIDS+=($!) AGENT_PIDS+=($!)
if [ -n "$gpu_slug" ]; then
  log "starting a profiler agent for the local GPU on queue ${GPU_QUEUE_PREFIX}$gpu_slug"
  REDIS_URL="$agent_redis_url" setsid "$PY" -m profiler_agent work --site "$SITE_URL" --token "$token" --queue "${GPU_QUEUE_PREFIX}$gpu_slug" --device cuda --name "local-$gpu_slug" &
  STARTED_PIDS+=($!) AGENT_PIDS+=($!)
fi

"$PY" manage.py seed_demo "${gpu_args[@]}"
log "GPU CodeForces is up: $SITE_URL  (demo users organizer / alice / bob, password demo-password; Ctrl-C stops)"
wait -n "${STARTED_PIDS[@]}" || true
log "a process stopped"
