"""A killed agent: no orphan keeps judging, its name comes back at once, its heartbeats had named the
run it judged, and its job is marked abandoned in RQ (real worker processes, real Redis, a real
HTTP site that records what they send)."""

import io
import os
import signal
import subprocess
import sys
import time
import uuid
import zipfile

import pytest
from rq.registry import StartedJobRegistry

from tests.agent.conftest import REDIS_URL, REPO, SMALL_RELU_ROWS
from tests.agent.processes import alive, wait_gone


@pytest.fixture
def relu_rows():
    """What these tests assert does not depend on the inputs' size: the small ReLU reference."""
    return SMALL_RELU_ROWS


SLOW_CANDIDATE = """
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(3600)  # judged "forever": the test kills the agent meanwhile
        return torch.relu(x)
"""


def zipped_bundle(directory) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in sorted(directory.iterdir()):
            z.write(path, path.name)
    return buffer.getvalue()


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, whatever session or group it moved to."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}")


def start_worker(site, queue, name, log_path, build_cache):
    return subprocess.Popen(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", "t", "--queue", queue.name,
         "--redis", REDIS_URL, "--name", name, "--device", "cpu", "--heartbeat-seconds", "0.5",
         "--cache-dir", str(build_cache)],
        cwd=REPO, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


def test_a_killed_worker_leaves_no_orphan_and_its_name_comes_back_at_once(site, queue, make_bundle, build_cache,
                                                                         tmp_path):
    site.bundles = {"slow.zip": zipped_bundle(make_bundle(SLOW_CANDIDATE))}
    site.run_bundles["7"] = "slow.zip"
    job = queue.enqueue("profiler_agent.service.jobs.judge_run", kwargs={"run_id": 7, "attempt": 2}, job_timeout=1200)
    name = f"liveness-{uuid.uuid4().hex[:6]}"
    log_path = tmp_path / "worker.log"
    worker = start_worker(site, queue, name, log_path, build_cache)
    try:
        def judged_child():  # the sandboxed child: carries the per-run marker in its environment
            for pid in descendants(worker.pid):
                try:
                    if b"JUDGED_RUN_MARKER=" in open(f"/proc/{pid}/environ", "rb").read():
                        return pid
                except OSError:
                    pass
            return None

        wait_for(judged_child, 120, f"the judged child to start\n{log_path.read_text()[-3000:]}")
        # while it judges, its heartbeats name the run and attempt
        wait_for(lambda: any(r["json"].get("judging") == [{"run_id": 7, "attempt": 2}] for r in site.requests
                             if r["path"] == "/api/v1/agent/heartbeat"), 10, "a heartbeat naming the run")
        tree = descendants(worker.pid)
        assert len(tree) >= 2  # the work-horse (its own process group) and the judged child (its own session)
        os.killpg(worker.pid, signal.SIGKILL)  # the worker's group: the horse and the child are not in it
        worker.wait()
        assert wait_gone(tree, 5.0) == []
        registry = StartedJobRegistry(queue.name, connection=queue.connection)
        assert job.id in registry.get_job_ids(cleanup=False)  # left behind by the killed worker

        started = time.monotonic()
        heartbeats_before = len(site.requests)
        worker = start_worker(site, queue, name, log_path, build_cache)
        record = wait_for(lambda: queue.connection.hgetall(f"rq:worker:{name}").get(b"pid") == str(worker.pid).encode(),
                          30, f"the restarted worker to register\n{log_path.read_text()[-3000:]}")
        assert record and time.monotonic() - started < 15
        assert worker.poll() is None, log_path.read_text()[-3000:]
        assert "There exists an active worker" not in log_path.read_text()
        # the dead worker's job was marked abandoned at the restart, and RQ's clean-up failed it
        wait_for(lambda: job.id in queue.failed_job_registry.get_job_ids(cleanup=False), 10, "the job to be failed")
        assert job.id not in registry.get_job_ids(cleanup=False)
        # the new worker judges nothing, and hands its predecessor's run back to the site at once
        first = wait_for(lambda: [r for r in site.requests[heartbeats_before:] if r["path"] == "/api/v1/agent/heartbeat"],
                         10, "the new worker's heartbeat")
        assert first[0]["json"]["judging"] == []
        assert first[0]["json"]["abandoned"] == [{"run_id": 7, "attempt": 2}]  # judged again at once
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def test_a_live_worker_of_the_same_name_is_not_taken_over(queue):
    """Only a dead worker of this host gives its name back: one alive keeps it (RQ refuses the newcomer)."""
    from profiler_agent.worker.job_guard import JudgeWorker
    from profiler_agent.worker.liveness import reclaim_name

    name = f"liveness-{uuid.uuid4().hex[:6]}"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "profiler_agent"])
    try:
        holder = JudgeWorker([queue.name], connection=queue.connection, name=name)
        holder.pid = sleeper.pid  # a live agent process on this host holds the name
        holder.register_birth()
        assert reclaim_name(queue.connection, name, JudgeWorker) == []
        with pytest.raises(ValueError, match="active worker"):
            JudgeWorker([queue.name], connection=queue.connection, name=name).register_birth()
        queue.connection.hset(f"rq:worker:{name}", "hostname", "another-host")
        sleeper.kill()
        sleeper.wait()
        assert not alive(sleeper.pid)
        assert reclaim_name(queue.connection, name, JudgeWorker) == []  # another host's worker: not ours to judge
        queue.connection.hset(f"rq:worker:{name}", "hostname", holder.hostname)
        queue.connection.sadd(f"rq:worker:{name}:executions", "run-5-1:abc")
        assert reclaim_name(queue.connection, name, JudgeWorker) == ["run-5-1"]  # this host's, and gone
        JudgeWorker([queue.name], connection=queue.connection, name=name).register_birth()
    finally:
        sleeper.kill()
        queue.connection.delete(f"rq:worker:{name}")
