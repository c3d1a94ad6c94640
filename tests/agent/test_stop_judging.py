"""A worker told to stop the attempt it judges (the heartbeat answer's `stop_judging`: the site cancelled
the run) ends that judging within seconds, leaves nothing of it running, reports nothing for it, and
judges the next job; `python -m profiler_agent work` against a real Redis and a small real HTTP site
(tests/agent/fake_site.py). tests/e2e/test_cancel_running.py does it with the real site."""

import io
import os
import random
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from profiler_agent.protocol.vocabulary import STOP_JUDGING
from tests.agent.conftest import REDIS_URL, REPO, SMALL_RELU_ROWS
from tests.agent.processes import descendants, process_table, wait_gone


# Its forward starts a daemon of its own session (killing the judged process's group misses it), which
# becomes `sleep <mark>` so the test can find it, then never returns.
NEVER_RETURNS = '''
    import os, time, torch

    def daemon():
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{mark}"])
            os._exit(0)
        os.wait()

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            daemon()
            while True:
                time.sleep(1)
'''
WRONG = '''
    import torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1.0
'''


@pytest.fixture
def relu_rows():
    return SMALL_RELU_ROWS


def zip_folder(root: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in sorted(root.iterdir()):
            z.write(path, path.name)
    return buffer.getvalue()


def wait_for(condition, what, process, log: Path, timeout=300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if process.poll() is not None:
            pytest.fail(f"the worker exited ({process.returncode}) before {what}:\n{log.read_text()[-4000:]}")
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-4000:]}")


def test_a_worker_told_to_stop_ends_the_judging_and_takes_the_next_job(site, queue, make_bundle, build_cache,
                                                                       tmp_path):
    mark = str(7_000_000 + random.randrange(1_000_000))
    site.bundles = {"hangs.zip": zip_folder(make_bundle(NEVER_RETURNS.replace("{mark}", mark), name="hangs")),
                    "wrong.zip": zip_folder(make_bundle(WRONG, name="wrong"))}
    jobs = {}
    for run_id, bundle in (("1", "hangs.zip"), ("2", "wrong.zip")):
        site.run_bundles[run_id] = bundle
        jobs[run_id] = queue.enqueue("profiler_agent.service.jobs.judge_run",
                                     kwargs={"run_id": int(run_id), "attempt": 1}, job_timeout=1200)
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", "agent-token-1",
         "--queue", queue.name, "--redis", REDIS_URL, "--name", f"stop-{uuid.uuid4().hex[:6]}", "--device", "cpu",
         "--burst", "--heartbeat-seconds", "60", "--cache-dir", str(build_cache)],
        cwd=REPO, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # the forward is running: its daemon is there
        daemon = wait_for(lambda: [pid for pid, (_, line) in process_table().items() if line == f"sleep {mark}"],
                          "the forward to start", worker, log)
        table = process_table()
        judged = [pid for pid in descendants(worker.pid, table) if "graders.judged_process" in table[pid][1]]
        assert judged, "the judged process should be a descendant of the worker"
        site.heartbeat_answer = {STOP_JUDGING: [{"run_id": 1, "attempt": 1}]}
        ordered = time.monotonic()

        wait_for(lambda: "2" in site.posts("/start"), "the next job's start", worker, log, timeout=60)
        # heartbeats come every 3 s while judging (60 s when idle): the stop came within seconds
        assert time.monotonic() - ordered < 15
        assert wait_gone([*daemon, *judged]) == []  # the daemon of its own session too
        assert worker.wait(timeout=600) == 0, log.read_text()[-4000:]
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, 9)
            worker.wait()
        for pid, (_, line) in process_table().items():  # a failed test's daemon, left by the killed worker
            if line == f"sleep {mark}":
                os.kill(pid, 9)
    output = log.read_text()
    assert "run 1 attempt 1 was cancelled; stopping its judging" in output, output[-4000:]

    results = site.posts("/result")
    assert set(results) == {"2"} and results["2"]["json"]["status"] == "wrong_answer"  # nothing for run 1
    assert jobs["1"].get_status(refresh=True) == "finished" and jobs["1"].return_value()["stopped"] is True
    assert jobs["2"].get_status(refresh=True) == "finished"
    beats = [r["json"] for r in site.requests if r["path"] == "/api/v1/agent/heartbeat"]
    naming_run_1 = [b for b in beats if b["judging"] == [{"run_id": 1, "attempt": 1}]]
    assert naming_run_1, "the heartbeats while judging run 1 named it"
