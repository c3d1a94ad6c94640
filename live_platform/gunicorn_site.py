"""The site under gunicorn as scripts/platform.sh runs it (deploy/gunicorn.conf.py).

    python -m live_platform.gunicorn_site wait URL [--timeout S]    # until URL answers (scripts/platform.sh)
"""
import argparse
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from live_platform.ports import free_port
from live_platform.processes import PY, ROOT, stop_process_group

GUNICORN = [PY, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "config.wsgi"]


def answers(url):
    """Whether any HTTP answer comes back (an error status counts: the server is up)."""
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def wait_until_answering(url, timeout=60, process=None, describe=lambda: ""):
    """Until `url` answers; fails early when `process` (the server's, if given) exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}:\n{describe()}")
        if answers(url):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout} s:\n{describe()}")


class GunicornSite:
    """`gunicorn -c deploy/gunicorn.conf.py config.wsgi` on a free port; its output goes to `log_path`."""

    def __init__(self, log_path, env=None, port=None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_path)
        self.env = dict(env if env is not None else os.environ, PORT=str(self.port), PYTHONUNBUFFERED="1")
        self.env.pop("GUNICORN_BIND", None)
        self.process = None

    def start(self, wait_path="/", timeout=60):
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(GUNICORN, cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        if wait_path is not None:
            self.wait_answering(wait_path, timeout)
        return self

    def wait_answering(self, path="/", timeout=60):
        wait_until_answering(self.url + path, timeout, self.process, self.output)

    def log_text(self):
        """All the server has printed so far."""
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def output(self):
        """The end of the log, for failure messages."""
        return self.log_text()[-8000:]

    def stop(self):
        if self.process is not None:
            stop_process_group(self.process)
            self._log.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    wait = commands.add_parser("wait", help="until URL answers (any HTTP status)")
    wait.add_argument("url")
    wait.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args(argv)
    try:
        wait_until_answering(args.url, args.timeout)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
