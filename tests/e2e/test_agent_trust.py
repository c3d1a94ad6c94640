"""The trust boundary between agent hosts, with real parts: the site over HTTP (live_server), the real
Redis with per-agent ACL users, a real site worker. Agent B holds only what an agent host has (its token,
its Redis credentials) and attacks a run that agent A started."""
import json
import uuid
import zlib

import pytest
import redis
import requests
from rq import Queue
from rq.serializers import JSONSerializer

from submissions import queueing
from submissions.models import GpuType, Run, RunStatus, Season, Standing
from submissions.services import accounts, submitting
from tests.conftest import EXAMPLES
from tests.site.pr_host import run_site_worker

pytestmark = pytest.mark.django_db(transaction=True)


def bundle_files(example):
    return [("files", (p.name, p.read_bytes())) for p in sorted((EXAMPLES / example).iterdir()) if p.is_file()]


def passed_result(speedup):
    return {"schema": 1, "status": "passed", "flags": [], "device": {"kind": "cpu", "name": "CPU"},
            "correctness": {"passed": True, "trials": 4, "max_abs_err": 0.0, "max_rel_err": 0.0},
            "timing": {"reference": {"median_ms": 2.0}, "candidate": {"median_ms": 2.0 / speedup}, "speedup": speedup},
            "metrics": {}, "variants": {}, "logs": {"compile": "", "stdout": "", "stderr": ""}}


def readable_values(attacker, key_names):
    """Everything the attacker's Redis user can read among these keys."""
    found = []
    readers = {b"string": lambda k: [attacker.get(k)], b"hash": lambda k: list(attacker.hgetall(k).items()),
               b"list": lambda k: attacker.lrange(k, 0, -1), b"set": lambda k: list(attacker.smembers(k)),
               b"zset": lambda k: attacker.zrange(k, 0, -1), b"stream": lambda k: attacker.xrange(k)}
    for key in key_names:
        try:
            kind = attacker.type(key)
            found.append((key, readers[kind](key) if kind in readers else []))
        except redis.exceptions.NoPermissionError:
            continue
    return found


@pytest.fixture
def contest(queue_prefix, agent_redis_users):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu, c500 = GpuType.objects.create(slug="cpu", name="CPU"), GpuType.objects.create(slug="c500", name="C500")
    season.gpu_types.add(cpu, c500)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    _, contestant_token = accounts.create_api_token(alice)
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, a_token = accounts.create_agent("agent-a", [cpu])
    _, b_token = accounts.create_agent("agent-b", [cpu])  # another volunteer's host of the same GPU type
    suffix = uuid.uuid4().hex[:8]
    return {"issue": issue, "token": contestant_token, "a_token": a_token, "b_token": b_token,
            "b_redis": redis.Redis.from_url(agent_redis_users(f"trust-b-{suffix}")), "prefix": queue_prefix}


def api(site, token, method, path, **kwargs):
    return requests.request(method, f"{site}/api/v1{path}", headers={"Authorization": f"Bearer {token}", **kwargs.pop(
        "headers", {})}, timeout=30, **kwargs)


def test_agent_b_cannot_find_steal_or_forge_what_agent_a_was_given(live_server, contest):
    site, b = live_server.url, contest["b_redis"]
    created = api(site, contest["token"], "POST", "/submissions", data={"issue": contest["issue"].code},
                  files=bundle_files("relu-cpu"))
    assert created.status_code == 201, created.text
    cpu_run = Run.objects.get(submission_id=created.json()["id"], gpu_type__slug="cpu")
    c500_run = Run.objects.get(submission_id=created.json()["id"], gpu_type__slug="c500")

    # B reads the job from Redis (it may: it carries nothing worth having) ...
    raw = b.hget(f"rq:job:{cpu_run.rq_job_id}", "data")
    job = json.loads(raw if raw[:1] == b"[" else zlib.decompress(raw))
    assert job == [queueing.JOB_FUNCTION, None, [], {"run_id": cpu_run.pk, "attempt": 1}]
    # ... but A starts the run first, and receives the attempt's secret.
    started = api(site, contest["a_token"], "POST", f"/agent/runs/{cpu_run.pk}/start", json={"attempt": 1})
    assert started.status_code == 200, started.text
    secret = started.json()["job_secret"]

    # Every key B's Redis user can read, anywhere in its database: the secret is in none of them.
    admin = queueing.connection()
    values = readable_values(b, list(admin.scan_iter(count=1000)))
    assert any(key == f"rq:job:{cpu_run.rq_job_id}".encode() for key, _ in values)  # the scan did read jobs
    assert secret.encode() not in repr(values).encode() and secret not in repr(values)

    # B cannot take A's run, fetch its bundle or report for it, even holding A's secret.
    assert api(site, contest["b_token"], "POST", f"/agent/runs/{cpu_run.pk}/start", json={"attempt": 1}).status_code == 409
    stolen = {"X-Job-Secret": secret}
    assert api(site, contest["b_token"], "GET", f"/agent/runs/{cpu_run.pk}/bundle", headers=stolen).status_code == 403
    forged = api(site, contest["b_token"], "POST", f"/agent/runs/{cpu_run.pk}/result", headers=stolen,
                 json=passed_result(999.0))
    assert forged.status_code == 403
    cpu_run.refresh_from_db()
    assert (cpu_run.status, cpu_run.speedup, cpu_run.agent.name) == (RunStatus.RUNNING, None, "agent-a")
    assert not Standing.objects.filter(best_speedup__isnull=False).exists()
    assert "999" not in requests.get(f"{site}/", timeout=10).text
    # Nor start a run of a GPU type the site does not let it serve, whatever it declares.
    api(site, contest["b_token"], "POST", "/agent/heartbeat", json={"queues": [c500_run.gpu_type.queue_name]})
    refused = api(site, contest["b_token"], "POST", f"/agent/runs/{c500_run.pk}/start", json={"attempt": 1})
    assert refused.status_code == 403 and "does not serve GPU type c500" in refused.json()["detail"]

    # A's own report goes through.
    reported = api(site, contest["a_token"], "POST", f"/agent/runs/{cpu_run.pk}/result", headers=stolen,
                   json=passed_result(2.0))
    assert reported.status_code == 200, reported.text
    cpu_run.refresh_from_db()
    assert (cpu_run.verdict, cpu_run.speedup) == ("passed", 2.0)


def test_agent_b_cannot_leave_its_database_nor_reach_the_site_queue(contest, tmp_path, settings,
                                                                    django_capture_on_commit_callbacks):
    b = contest["b_redis"]
    settings.SITE_QUEUE_NAME = f"site-{uuid.uuid4().hex[:8]}"  # this test's own site queue (on SITE_REDIS_URL)
    with pytest.raises(redis.exceptions.NoPermissionError):
        b.execute_command("SELECT", "1")
    url = b.connection_pool.connection_kwargs
    with pytest.raises(redis.exceptions.RedisError):
        redis.Redis(host=url["host"], port=url["port"], username=url["username"], password=url["password"], db=1).ping()
    for command in (["KEYS", "*"], ["SCAN", "0"], ["CONFIG", "GET", "*"], ["EVAL", "return 1", "0"],
                    ["FUNCTION", "LIST"], ["SCRIPT", "EXISTS", "x"], ["ACL", "WHOAMI"], ["MOVE", "x", "1"],
                    ["COPY", "x", "y", "DB", "1"], ["CLIENT", "LIST"], ["PUBLISH", "rq:pubsub:agent-a", "x"]):
        with pytest.raises(redis.exceptions.NoPermissionError):
            b.execute_command(*command)
    # Commands that would harm the shared test Redis if the rules were wrong: asked of ACL DRYRUN instead.
    user = url["username"]
    for command in (["FLUSHALL"], ["FLUSHDB"], ["SHUTDOWN"], ["SWAPDB", "0", "1"], ["MONITOR"],
                    ["CLIENT", "KILL", "TYPE", "normal"], ["CONFIG", "SET", "dir", "/tmp"], ["DEBUG", "SLEEP", "0"],
                    ["MIGRATE", "h", "1", "k", "0", "1"], ["MODULE", "LIST"], ["FCALL", "f", "0"]):
        verdict = queueing.connection().execute_command("ACL", "DRYRUN", user, *command)
        assert verdict != b"OK" and b"no permissions" in verdict, command
    site_queue_key = f"rq:queue:{settings.SITE_QUEUE_NAME}"
    with pytest.raises(redis.exceptions.NoPermissionError):
        b.rpush(site_queue_key, "forged")
    with pytest.raises(redis.exceptions.NoPermissionError):
        b.hset("rq:queue:site-forged", "x", "y")

    # B pushes a job into every queue it can reach: the site's worker never runs it ...
    b_marker, legit_marker = tmp_path / "b-ran", tmp_path / "legit-ran"
    forged = Queue(f"{contest['prefix']}cpu", connection=b, serializer=JSONSerializer)
    forged.enqueue("tests.e2e.site_jobs.touch", kwargs={"path": str(b_marker)})
    # ... while a legit job the site queues does run there.
    queueing.enqueue_site_job("tests.e2e.site_jobs.touch", kwargs={"path": str(legit_marker)}, description="legit")
    assert run_site_worker(django_capture_on_commit_callbacks) == 1
    assert legit_marker.exists() and not b_marker.exists()
    for key in queueing.site_connection().scan_iter(f"rq:*{settings.SITE_QUEUE_NAME}*"):
        queueing.site_connection().delete(key)
