"""The platform's processes: each in a process group of its own, so that a stop reaches its children
(gunicorn's workers, an agent's work-horse); and the progress lines of the benches that drive them."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def stop_process_group(process, grace_s=30):
    """SIGTERM to the process's group, SIGKILL after grace_s."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


class ServiceProcess:
    """One of the platform's processes; its output goes to the end of its log (a process started again
    adds to the same one)."""

    stop_grace_s = 30

    def __init__(self, name, command, env, log_path):
        self.name, self.command, self.env, self.log_path = name, command, env, Path(log_path)
        self.process = None

    def start(self):
        with open(self.log_path, "ab") as log_file:  # the child keeps its own copy
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=self.env, start_new_session=True,
                                            stdout=log_file, stderr=subprocess.STDOUT)

    def stop(self):
        if self.process is not None:
            stop_process_group(self.process, self.stop_grace_s)


def make_log(tag, to_stderr=False, clock=False):
    """A bench's progress lines: `[tag] message` (`[tag HH:MM:SS] message` with `clock`), flushed at once."""

    def log(message):
        stamp = f" {time.strftime('%H:%M:%S')}" if clock else ""
        print(f"[{tag}{stamp}] {message}", file=sys.stderr if to_stderr else sys.stdout, flush=True)

    return log
