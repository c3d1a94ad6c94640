"""deploy/gunicorn.conf.py's worker hook: what a worker loaded before its first request (Django, the
project, every view module) is frozen out of the garbage collector, so a full collection scans only
what requests made (over everything it paused the worker ~95 ms: docs/performance.md). Run in a
fresh interpreter, as a worker is."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, os, runpy, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
hooks = runpy.run_path("deploy/gunicorn.conf.py")
before = gc.get_freeze_count()
hooks["post_worker_init"](None)
print(before, gc.get_freeze_count(), "leaderboard.views" in sys.modules)
"""


def test_a_worker_freezes_what_it_loaded_with_every_view_module_imported():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    before, after, views_loaded = done.stdout.split()
    assert int(before) == 0 and int(after) > 50_000  # Django and the project: well over 50,000 objects
    assert views_loaded == "True"
