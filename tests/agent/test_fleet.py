"""The agent side of the fleet with real processes: the job gate shared across RQ's fork, a worker
that takes no job while the site says so or while it cannot reach the site, and `python -m profiler_agent fleet` keeping its workers
running (a killed one comes back) and stopping them all on SIGTERM."""

import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from live_platform.proxy import CuttableProxy
from profiler_agent.worker.job_gate import JobGate, apply_site_answer
from tests.agent.conftest import REDIS_URL, REPO
from tests.agent.processes import alive, wait_gone

TOKEN = "agent-token-fleet"


def wait_for(condition, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def test_the_gate_is_shared_with_a_forked_horse_and_a_heartbeat_keeps_a_pause():
    gate = JobGate()
    assert gate.accepting()
    pid = os.fork()
    if pid == 0:  # what a work-horse does when start is refused for a drain
        apply_site_answer(gate, {"accept_jobs": False, "why": "draining: maintenance", "retry_after_s": None})
        os._exit(0)
    os.waitpid(pid, 0)
    assert not gate.accepting() and gate.why() == "draining: maintenance"
    assert gate.set_accepting(True) and gate.accepting()  # the heartbeat that follows a resume
    assert not gate.set_accepting(True)  # no change, nothing to log
    apply_site_answer(gate, {"accept_jobs": False, "why": "outdated for season S1", "retry_after_s": 0.5})
    gate.set_accepting(True)  # a heartbeat does not cut a pause short
    assert not gate.accepting() and "outdated" in gate.why()
    time.sleep(0.6)
    assert gate.accepting()
    apply_site_answer(gate, {"detail": "stale attempt"})  # an ordinary refusal leaves the gate alone
    assert gate.accepting()


def test_a_worker_takes_no_job_while_the_site_says_so(site, queue, build_cache):
    site.heartbeat_answer = {"accept_jobs": False, "why": "draining"}
    site.start_codes = {"7": 409}  # the run is not ours after all: nothing is judged
    queue.enqueue("profiler_agent.service.jobs.judge_run", kwargs={"run_id": 7, "attempt": 1})
    worker = subprocess.Popen(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", TOKEN, "--queue", queue.name,
         "--redis", REDIS_URL, "--name", f"gated-{uuid.uuid4().hex[:6]}", "--device", "cpu",
         "--heartbeat-seconds", "0.5", "--cache-dir", str(build_cache)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: len([r for r in site.requests if r["path"].endswith("/heartbeat")]) >= 4, "heartbeats")
        assert queue.count == 1 and not site.posts("/start")  # told not to: the job waits
        site.heartbeat_answer = {"accept_jobs": True}
        wait_for(lambda: site.posts("/start"), "the worker taking the job once the site says so")
        assert queue.count == 0
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=60)
    assert worker.returncode == 0, stderr[-3000:]
    assert "the site says: take no jobs (draining)" in stderr and "the site says: take jobs again" in stderr


def test_a_worker_cut_off_from_the_site_takes_no_job_until_a_heartbeat_gets_through(site, queue):
    """A partition between a host and the site (its Redis still up): a job it took could not be started
    and would sit in its claim list until the site handed it back and charged the host (three such
    drops quarantine it). Cut off, it leaves the jobs in the queue for the hosts that can start them."""
    site.heartbeat_answer = {"accept_jobs": True}
    site.start_codes = {"7": 409}  # once the link is back: the run is not ours after all, nothing is judged
    link = CuttableProxy(("127.0.0.1", int(site.url.rsplit(":", 1)[1])))
    worker = subprocess.Popen(
        [sys.executable, "-m", "profiler_agent", "work", "--site", link.url, "--token", TOKEN, "--queue", queue.name,
         "--redis", REDIS_URL, "--name", f"cut-{uuid.uuid4().hex[:6]}", "--device", "cpu",
         "--heartbeat-seconds", "0.5"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    heartbeats = lambda: len([r for r in site.requests if r["path"].endswith("/heartbeat")])  # noqa: E731
    try:
        wait_for(lambda: heartbeats() >= 2, "heartbeats (the site names the claim list)")
        link.cut()
        # past a failed heartbeat and the dequeue that was blocking when the link went (5 s at most)
        time.sleep(7)
        seen = heartbeats()
        queue.enqueue("profiler_agent.service.jobs.judge_run", kwargs={"run_id": 7, "attempt": 1})
        time.sleep(4)
        assert heartbeats() == seen, "the link was cut: no heartbeat reaches the site"
        assert queue.count == 1 and not site.posts("/start"), "a worker cut off from the site took a job"
        link.heal()
        wait_for(lambda: site.posts("/start"), "the worker taking the job once a heartbeat gets through")
        assert queue.count == 0
    finally:
        link.close()
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=60)
    assert worker.returncode == 0, stderr[-3000:]
    assert "the site cannot be reached: taking no jobs until a heartbeat gets through" in stderr
    assert "the site says: take jobs again" in stderr


def test_a_worker_started_while_redis_lacks_its_user_waits_for_it(site, queue):
    """A host (re)started after a Redis restart lost its ACL user, before the site's sweep made it again:
    RQ's worker talks to Redis as it is made, and the process exited there (AuthenticationError), again
    and again under systemd. It waits instead, heartbeats going on, and works once the user is back."""
    from redis import Redis

    site.start_codes = {"7": 409}  # nothing is judged: the start shows the worker took the job
    user, password = f"test-agent-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin = Redis.from_url(REDIS_URL)
    url = REDIS_URL.replace("redis://", f"redis://{user}:{password}@", 1)
    worker = subprocess.Popen(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", TOKEN, "--queue", queue.name,
         "--name", f"nouser-{uuid.uuid4().hex[:6]}", "--device", "cpu", "--heartbeat-seconds", "0.5"],
        cwd=REPO, env={**os.environ, "REDIS_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        wait_for(lambda: site.requests or worker.poll() is not None, "a heartbeat while Redis refuses the host")
        time.sleep(3)
        assert worker.poll() is None, "the worker exited while its Redis user was missing"
        admin.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all")  # the sweep's doing
        queue.enqueue("profiler_agent.service.jobs.judge_run", kwargs={"run_id": 7, "attempt": 1})
        wait_for(lambda: site.posts("/start") or worker.poll() is not None, "the worker taking the job")
        assert site.posts("/start"), "the worker exited"
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=60)
        admin.execute_command("ACL", "DELUSER", user)
    assert worker.returncode == 0, stderr[-3000:]
    assert "Redis refused this host's credentials" in stderr


def test_the_fleet_restarts_a_killed_worker_and_stops_them_all(site, queue, tmp_path):
    log_path = tmp_path / "fleet.log"
    env = {**os.environ, "PROFILER_AGENT_SITE": site.url, "PROFILER_AGENT_TOKEN": TOKEN}
    with open(log_path, "wb") as log:
        fleet = subprocess.Popen(
            [sys.executable, "-m", "profiler_agent", "fleet", "--cpu-workers", "2", "--name", "host-a",
             "--queue", queue.name, "--redis", REDIS_URL, "--heartbeat-seconds", "0.5"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def started():
        return re.findall(r"started worker (\S+) \(pid (\d+)\)", log_path.read_text())

    def beating(name):
        return any(r["json"] and (r["json"].get("worker") or {}).get("name") == name
                   for r in site.requests if r["path"].endswith("/heartbeat"))

    try:
        wait_for(lambda: beating("host-a-cpu0") and beating("host-a-cpu1"), "both workers' heartbeats")
        beat = next(r["json"] for r in site.requests if r["path"].endswith("/heartbeat"))
        assert beat["worker"]["gpu"] is None and "--token" not in " ".join(map(str, beat.values()))
        pids = dict(started())
        victim = int(pids["host-a-cpu0"])
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(started()) == 3, "the killed worker's restart", timeout=60)
        assert started()[-1][0] == "host-a-cpu0" and int(started()[-1][1]) != victim
        assert "worker host-a-cpu0 exited with -9; restarting in 1.0 s" in log_path.read_text()
        children = [int(pid) for _, pid in started()[1:]]
        fleet.send_signal(signal.SIGTERM)
        assert fleet.wait(timeout=90) == 0
        assert wait_gone(children) == []
        assert "stopping 2 worker(s)" in log_path.read_text()
    finally:
        if fleet.poll() is None:
            os.killpg(fleet.pid, signal.SIGKILL)
        for _, pid in started():
            if alive(int(pid)):
                os.kill(int(pid), signal.SIGKILL)


def test_the_fleet_says_when_it_finds_no_gpu():
    for extra, message in (([], "no GPU found through NVML"), (["--gpus", "0"], "no GPU '0' on this host")):
        completed = subprocess.run(
            [sys.executable, "-m", "profiler_agent", "fleet", "--site", "http://127.0.0.1:9", "--token", TOKEN,
             "--queue", "gpu.x", *extra], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert completed.returncode == 2 and message in completed.stderr
