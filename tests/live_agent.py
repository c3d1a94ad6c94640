"""A real profiler agent process for tests that run the whole path, and a poller for its verdicts."""
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[1]
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


class AgentProcess:
    """A real `python -m profiler_agent work` process; its output is kept for failure messages."""

    def __init__(self, site, token, queue, log_path, heartbeat_seconds=2, redis_url=REDIS_URL):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "profiler_agent", "work", "--site", site, f"--token={token}", "--queue", queue,
             "--redis", redis_url, "--name", f"e2e-{uuid.uuid4().hex[:6]}", "--device", "cpu",
             "--heartbeat-seconds", str(heartbeat_seconds), "--timeout", "240"],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def output(self):
        self.log.flush()
        return Path(self.log_path).read_text(errors="replace")[-6000:]

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def wait_for_runs(site, token, submission_id, agent, timeout=300):
    """Polls the API until every run of the submission is done; returns the submission JSON."""
    deadline = time.monotonic() + timeout
    body = None
    while time.monotonic() < deadline:
        response = requests.get(f"{site}/api/v1/submissions/{submission_id}",
                                headers={"Authorization": f"Bearer {token}"}, timeout=10)
        body = response.json()
        if body["runs"] and all(r["status"] == "done" for r in body["runs"]):
            return body
        if agent.process.poll() is not None:
            pytest.fail(f"the agent exited with {agent.process.returncode}:\n{agent.output()}")
        time.sleep(1)
    pytest.fail(f"runs not done after {timeout} s: {body and body['runs']}\nagent output:\n{agent.output()}")
