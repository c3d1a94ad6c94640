"""The site under gunicorn as scripts/platform.sh runs it (deploy/gunicorn.conf.py), for tests and benches."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GunicornSite:
    """`gunicorn -c deploy/gunicorn.conf.py leaderboard.wsgi` on a free port; its output goes to `log_path`."""

    def __init__(self, log_path, env=None, port=None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_path)
        self.env = dict(env if env is not None else os.environ, PORT=str(self.port), PYTHONUNBUFFERED="1")
        self.env.pop("GUNICORN_BIND", None)
        self.process = None

    def start(self, wait_path="/", timeout=60):
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "leaderboard.wsgi"], cwd=ROOT,
            env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        if wait_path is not None:
            self.wait_answering(wait_path, timeout)
        return self

    def wait_answering(self, path="/", timeout=60):
        """Until any HTTP answer comes back (an error status counts: the server is up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.output()}")
            try:
                urllib.request.urlopen(self.url + path, timeout=2).close()
                return
            except urllib.error.HTTPError:
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not answer within {timeout} s:\n{self.output()}")

    def output(self):
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-8000:]

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.process is not None:
            self._log.close()
