"""Gunicorn settings for the site; every value can be overridden from the environment."""
import os

bind = os.environ.get("GUNICORN_BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 10
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
errorlog = "-"
# Upload bodies are read fully before Django sees them; keep them bounded like the bundle limits.
limit_request_field_size = 16384
# The longest request line gunicorn takes (its default is 4094): beyond it gunicorn answers a bare 414
# that no page of ours can replace. A pasted address with a long search (5,000 characters on the walk)
# then reaches the site, which cuts the search and says so (submissions/search.py); nginx's default
# buffers (8k) take such a line too.
limit_request_line = 8190
# gunicorn >= 25.1 opens a control socket for `gunicornc` at $XDG_RUNTIME_DIR/gunicorn.ctl or
# ~/.gunicorn/gunicorn.ctl: one path for every gunicorn of the user, so a second instance takes over
# the first's socket and stopping either deletes it. Off unless this instance is given its own path.
# (Older gunicorns ignore both names.)
if os.environ.get("GUNICORN_CONTROL_SOCKET"):
    control_socket = os.environ["GUNICORN_CONTROL_SOCKET"]
else:
    control_socket_disable = True


def post_worker_init(worker):
    """What a worker has loaded before its first request (Django, the project, every view module) lives
    as long as the worker: it is moved out of the garbage collector's reach. A full collection then
    scans only what requests made; over everything it paused all of the worker's threads for about
    95 ms, the tail of the boards' latency under churn (docs/performance.md)."""
    import gc

    from django.urls import get_resolver

    get_resolver().url_patterns  # imports every view module now, not in the first request
    gc.freeze()
