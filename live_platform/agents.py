"""A real profiler agent process (`python -m profiler_agent work` on the CPU) and a poller for the verdicts
it gives, as the contestants' API shows them."""
import os
import subprocess
import time
import uuid
from pathlib import Path

import requests

from live_platform.processes import PY, ROOT, stop_process_group

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


class AgentProcess:
    """One agent judging on the CPU; its output is kept for failure messages."""

    def __init__(self, site, token, queue, log_path, heartbeat_seconds=2, redis_url=REDIS_URL):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.process = subprocess.Popen(
            [PY, "-m", "profiler_agent", "work", "--site", site, f"--token={token}", "--queue", queue,
             "--redis", redis_url, "--name", f"e2e-{uuid.uuid4().hex[:6]}", "--device", "cpu",
             "--heartbeat-seconds", str(heartbeat_seconds), "--timeout", "240"],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def output(self):
        self.log.flush()
        return Path(self.log_path).read_text(errors="replace")[-6000:]

    def stop(self):
        stop_process_group(self.process)
        self.log.close()


class RunsNotDone(AssertionError):
    """The runs did not all finish, or the agent judging them exited (a test's failure)."""


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
            raise RunsNotDone(f"the agent exited with {agent.process.returncode}:\n{agent.output()}")
        time.sleep(1)
    raise RunsNotDone(f"runs not done after {timeout} s: {body and body['runs']}\nagent output:\n{agent.output()}")
