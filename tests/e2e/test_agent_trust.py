"""The trust boundary between agent hosts, with real parts: the site over HTTP (live_server), the real
Redis with per-agent ACL users, a real site worker. Agent B holds only what an agent host has (its token,
its Redis credentials) and attacks a run that agent A started."""
import json
import uuid
import zlib
from datetime import timedelta

import pytest
import redis
import requests
from django.utils import timezone
from rq import Queue
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from submissions import queueing
from submissions.models import AuditEntry, GpuType, Run, RunStatus, Season, Standing
from submissions.services import accounts, agent_redis, submitting
from live_platform import kernels
from tests.conftest import EXAMPLES
from tests.site.pr_host import run_site_worker

pytestmark = pytest.mark.django_db(transaction=True)


def bundle_files(example):
    """The example's files as a new kernel (kernels.distinct): tests here submit one example several times."""
    files = [(p.name, p.read_bytes()) for p in sorted((EXAMPLES / example).iterdir()) if p.is_file()]
    return [("files", pair) for pair in kernels.distinct(files)]


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
    suffix = uuid.uuid4().hex[:8]  # Redis users are the server's, shared by every test process
    a, a_token = accounts.create_agent(f"trust-a-{suffix}", [cpu])
    b, b_token = accounts.create_agent(f"trust-b-{suffix}", [cpu])  # another volunteer's host of the same type
    contest = {"issue": issue, "token": contestant_token, "a": a, "a_token": a_token, "b": b, "b_token": b_token,
            "a_url": agent_redis_users(a.name), "b_url": agent_redis_users(b.name), "prefix": queue_prefix,
            "cpu": cpu, "c500": c500}
    return {**contest, "a_redis": redis.Redis.from_url(contest["a_url"]), "b_redis": redis.Redis.from_url(contest["b_url"])}


def take(connection, agent, queue_name):
    """What a host's worker does to take the job at the head of a queue (profiler_agent/worker/job_claims.py)."""
    return connection.lmove(f"rq:queue:{queue_name}", agent_redis.claim_list(agent.name), "LEFT", "RIGHT")


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
    # ... but A's worker takes it from the queue and starts the run, and receives the attempt's secret.
    assert take(contest["a_redis"], contest["a"], cpu_run.queue_name).decode() == cpu_run.rq_job_id
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
    assert (cpu_run.status, cpu_run.speedup, cpu_run.agent) == (RunStatus.RUNNING, None, contest["a"])
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

    # B cannot push a job into any queue, its own GPU type's included; the site's worker runs its own ...
    b_marker, legit_marker = tmp_path / "b-ran", tmp_path / "legit-ran"
    forged = Queue(f"{contest['prefix']}cpu", connection=b, serializer=JSONSerializer)
    with pytest.raises(redis.exceptions.NoPermissionError):
        forged.enqueue("tests.e2e.site_jobs.touch", kwargs={"path": str(b_marker)})
    # ... while a legit job the site queues does run there.
    queueing.enqueue_site_job("tests.e2e.site_jobs.touch", kwargs={"path": str(legit_marker)}, description="legit")
    assert run_site_worker(django_capture_on_commit_callbacks) == 1
    assert legit_marker.exists() and not b_marker.exists()
    for key in queueing.site_connection().scan_iter(f"rq:*{settings.SITE_QUEUE_NAME}*"):
        queueing.site_connection().delete(key)


def submit_relu(site, contest):
    created = api(site, contest["token"], "POST", "/submissions", data={"issue": contest["issue"].code},
                  files=bundle_files("relu-cpu"))
    assert created.status_code == 201, created.text
    return Run.objects.get(submission_id=created.json()["id"], gpu_type__slug="cpu")


def test_a_host_cannot_start_a_run_its_queue_did_not_hand_it(live_server, contest):
    """The probe: B guessed a queued run's id and started it while its job was still in Redis, got the
    secret and the contestant's code, and reported 999x; the worker that dequeued it later got 409."""
    site = live_server.url
    run = submit_relu(site, contest)
    refused = api(site, contest["b_token"], "POST", f"/agent/runs/{run.pk}/start", json={"attempt": 1})
    assert refused.status_code == 403 and "still waiting in its queue" in refused.json()["detail"]
    assert "job_secret" not in refused.json()
    # A takes the job; B, which did not, is still refused, and A starts it.
    assert take(contest["a_redis"], contest["a"], run.queue_name).decode() == run.rq_job_id
    refused = api(site, contest["b_token"], "POST", f"/agent/runs/{run.pk}/start", json={"attempt": 1})
    assert refused.status_code == 403 and f"not handed to agent {contest['b'].name}" in refused.json()["detail"]
    assert api(site, contest["a_token"], "POST", f"/agent/runs/{run.pk}/start", json={"attempt": 1}).status_code == 200
    assert AuditEntry.objects.filter(action="run.start_refused", object_id=str(run.pk),
                                     actor_label=f"agent:{contest['b'].name}").count() == 2
    # the job left A's claim list at start
    assert contest["a_redis"].llen(agent_redis.claim_list(contest["a"].name)) == 0
    run.refresh_from_db()
    assert (run.status, run.agent) == (RunStatus.RUNNING, contest["a"])


def test_a_host_reaches_only_its_own_queues_and_nothing_global(contest, settings):
    """The probe: any host could SET rq:suspended (every worker stopped), delete another GPU type's jobs
    (LREM, DEL: the H100 run ended internal_error), and push 200,000 fake ids into a queue."""
    b, admin = contest["b_redis"], queueing.connection()
    user = b.connection_pool.connection_kwargs["username"]
    cpu_queue, c500_queue = f"rq:queue:{contest['cpu'].queue_name}", f"rq:queue:{contest['c500'].queue_name}"
    c500_job = f"rq:job:{queueing.job_id(7, 1, 'c500')}"
    claims, a_claims = agent_redis.claim_list(contest["b"].name), agent_redis.claim_list(contest["a"].name)

    def refused(*command):
        verdict = admin.execute_command("ACL", "DRYRUN", user, *command)
        return verdict != b"OK" and b"no permissions" in verdict

    for command in (["SET", "rq:suspended", "1"], ["EXISTS", "rq:suspended"], ["SADD", "rq:workers", "x"],
                    ["RPUSH", cpu_queue, "fake"], ["LPUSH", cpu_queue, "fake"], ["LREM", cpu_queue, "0", "x"],
                    ["LPOP", cpu_queue], ["BLPOP", cpu_queue, "1"], ["RPOPLPUSH", cpu_queue, claims],
                    ["DEL", cpu_queue], ["LTRIM", cpu_queue, "1", "0"], ["LSET", cpu_queue, "0", "x"],
                    ["LMOVE", cpu_queue, a_claims, "LEFT", "RIGHT"],  # into another host's claim list
                    ["LMOVE", c500_queue, claims, "LEFT", "RIGHT"], ["LLEN", c500_queue],  # a type not granted
                    ["DEL", c500_job], ["HSET", c500_job, "status", "failed"], ["HGETALL", c500_job],
                    ["LREM", claims, "0", "x"], ["DEL", claims], ["LPOP", claims], ["RPUSH", claims, "x"],
                    ["HSET", f"rq:worker:{agent_redis.username_for(contest['a'].name)}:w", "death", "x"],
                    ["SET", "gpucf:anything", "1"]):
        assert refused(*command), command
    for command in (["LMOVE", cpu_queue, claims, "LEFT", "RIGHT"], ["LLEN", cpu_queue], ["LPOS", claims, "x"],
                    ["HSET", f"rq:job:{queueing.job_id(7, 1, 'cpu')}", "status", "started"],
                    ["HSET", f"rq:worker:{user}:b-gpu0", "pid", "1"], ["ZADD", f"rq:wip:{contest['cpu'].queue_name}", "1", "x"]):
        assert admin.execute_command("ACL", "DRYRUN", user, *command) == b"OK", command
    # the flood, for real: the first fake id is refused
    with pytest.raises(redis.exceptions.NoPermissionError):
        b.rpush(cpu_queue, *[f"fake-{i}" for i in range(1000)])
    assert admin.llen(cpu_queue) == 0


def test_a_host_can_close_the_jobs_it_took_in_rq(contest):
    """RQ ends every job (finished or failed) in one MULTI that also expires `rq:job::<id>:dependencies`
    (RQ's own key for it, with two colons). Refused that key, the whole transaction failed: every job
    a host judged stayed `started` in Redis, with a traceback in the host's log for each."""
    admin = queueing.connection()
    job_id = queueing.job_id(7, 1, "cpu")
    queueing.enqueue_judging(contest["cpu"].queue_name, job_id, {"run_id": 7, "attempt": 1})
    try:
        job = Job.fetch(job_id, connection=contest["b_redis"], serializer=JSONSerializer)
        with contest["b_redis"].pipeline() as pipe:  # what RQ's handle_job_success sends, in part
            job.set_status(JobStatus.FINISHED, pipeline=pipe)
            job.cleanup(ttl=60, pipeline=pipe)
            pipe.execute()
        assert Job.fetch(job_id, connection=admin, serializer=JSONSerializer).get_status() == JobStatus.FINISHED
        # and still only its own GPU types' jobs
        user = contest["b_redis"].connection_pool.connection_kwargs["username"]
        other = f"rq:job::{queueing.job_id(7, 1, 'c500')}:dependencies"
        assert b"no permissions" in admin.execute_command("ACL", "DRYRUN", user, "EXPIRE", other, "60")
    finally:
        admin.delete(f"rq:job:{job_id}", f"rq:job::{job_id}:dependencies")
        admin.lrem(f"rq:queue:{contest['cpu'].queue_name}", 0, job_id)


def test_a_host_that_takes_jobs_and_drops_them_is_found_and_shut_out(live_server, contest, settings):
    from submissions.services import recovery

    site = live_server.url
    settings.AGENT_DROPPED_JOBS_BEFORE_QUARANTINE = 2
    runs = []
    for i in range(2):
        issue = submitting.open_issue(contest["issue"].season, contest["issue"].author, title=f"drop {i}")
        created = api(site, contest["token"], "POST", "/submissions", data={"issue": issue.code},
                      files=bundle_files("relu-cpu"))
        runs.append(Run.objects.get(submission_id=created.json()["id"], gpu_type__slug="cpu"))
    for run in runs:
        assert take(contest["b_redis"], contest["b"], run.queue_name).decode() == run.rq_job_id
    now = timezone.now()
    recovery.sweep_runs(now=now)  # first seen in B's claim list: left alone
    assert {r.attempts for r in Run.objects.filter(pk__in=[r.pk for r in runs])} == {1}
    recovery.sweep_runs(now=now + timedelta(seconds=settings.RUN_CLAIM_TIMEOUT_SECONDS + 1))
    for run in runs:
        run.refresh_from_db()
        # back at the head of the queue as a new attempt, which costs the run nothing
        assert (run.status, run.attempts, run.spent_attempts) == (RunStatus.QUEUED, 2, 1)
        assert queueing.is_waiting(run.queue_name, run.rq_job_id)
        assert AuditEntry.objects.filter(action="run.claim_dropped", object_id=str(run.pk)).exists()
    contest["b"].refresh_from_db()
    assert contest["b"].dropped_jobs == 2 and "never started them" in contest["b"].quarantine_reason
    # B's Redis user is off: its connections are closed and it cannot log in again
    with pytest.raises(redis.exceptions.RedisError):
        redis.Redis.from_url(contest["b_url"]).ping()
    assert AuditEntry.objects.filter(action="agent.quarantined", object_id=str(contest["b"].pk)).exists()
    # A takes a run and judges it
    taken = take(contest["a_redis"], contest["a"], runs[0].queue_name).decode()
    run = next(run for run in runs if run.rq_job_id == taken)
    assert api(site, contest["a_token"], "POST", f"/agent/runs/{run.pk}/start", json={"attempt": 2}).status_code == 200


def test_the_sweep_makes_agents_redis_users_again_after_redis_lost_them(contest):
    from submissions.services import recovery

    a = contest["a_redis"]
    user = a.connection_pool.connection_kwargs["username"]
    assert a.ping()
    queueing.connection().execute_command("ACL", "DELUSER", user)  # what a restart without an ACL file does
    with pytest.raises(redis.exceptions.RedisError):
        redis.Redis.from_url(contest["a_url"]).ping()
    recovery.sweep_runs()
    # the same password works again, with the same rules
    assert redis.Redis.from_url(contest["a_url"]).ping()
    verdict = queueing.connection().execute_command("ACL", "DRYRUN", user, "SET", "rq:suspended", "1")
    assert b"no permissions" in verdict

    # a user left with rules other than the site's code gives now (an upgrade changed them) is rewritten
    admin, take_job = queueing.connection(), ["LMOVE", f"rq:queue:{contest['cpu'].queue_name}",
                                               agent_redis.claim_list(contest["a"].name), "LEFT", "RIGHT"]
    admin.execute_command("ACL", "SETUSER", user, "resetkeys", "clearselectors")
    assert b"no permissions" in admin.execute_command("ACL", "DRYRUN", user, *take_job)
    queueing.site_connection().hset(agent_redis.rules_key(), contest["a"].name, "older")
    recovery.sweep_runs()
    assert admin.execute_command("ACL", "DRYRUN", user, *take_job) == b"OK"
    assert redis.Redis.from_url(contest["a_url"]).ping()


def test_a_late_report_after_a_hand_back_is_late_not_forged(live_server, contest, settings):
    """The probe: a host cut off from the site for 2 minutes had its run handed back (right), but its
    honest late report was audited as run.forged_report_refused."""
    from submissions.services import recovery

    site = live_server.url
    first, second = submit_relu(site, contest), None
    take(contest["a_redis"], contest["a"], first.queue_name)
    secret = api(site, contest["a_token"], "POST", f"/agent/runs/{first.pk}/start", json={"attempt": 1}).json()["job_secret"]
    silent = timezone.now() + timedelta(seconds=settings.RUN_SILENT_AFTER_SECONDS + 1)
    recovery.sweep_runs(now=silent)  # A is cut off: its heartbeats stopped naming the run
    first.refresh_from_db()
    assert (first.status, first.attempts) == (RunStatus.QUEUED, 2)
    progress = api(site, contest["a_token"], "POST", f"/agent/runs/{first.pk}/progress",
                   headers={"X-Job-Secret": secret}, json={"attempt": 1, "stage": "timing"})
    assert progress.status_code == 409
    # no other host started attempt 2 yet: A's late judgement is the verdict, and the queued job is withdrawn
    late = api(site, contest["a_token"], "POST", f"/agent/runs/{first.pk}/result", headers={"X-Job-Secret": secret},
               json=passed_result(2.0))
    assert late.status_code == 200, late.text
    first.refresh_from_db()
    assert (first.status, first.verdict, first.speedup) == (RunStatus.DONE, "passed", 2.0)
    assert not queueing.is_waiting(first.queue_name, first.rq_job_id)

    # again, but B judges the second attempt meanwhile: A's late report is kept as evidence, not used
    issue = submitting.open_issue(contest["issue"].season, contest["issue"].author, title="second")
    created = api(site, contest["token"], "POST", "/submissions", data={"issue": issue.code}, files=bundle_files("relu-cpu"))
    second = Run.objects.get(submission_id=created.json()["id"], gpu_type__slug="cpu")
    take(contest["a_redis"], contest["a"], second.queue_name)
    secret = api(site, contest["a_token"], "POST", f"/agent/runs/{second.pk}/start", json={"attempt": 1}).json()["job_secret"]
    recovery.sweep_runs(now=timezone.now() + timedelta(seconds=settings.RUN_SILENT_AFTER_SECONDS + 1))
    take(contest["b_redis"], contest["b"], second.queue_name)
    assert api(site, contest["b_token"], "POST", f"/agent/runs/{second.pk}/start", json={"attempt": 2}).status_code == 200
    late = api(site, contest["a_token"], "POST", f"/agent/runs/{second.pk}/result", headers={"X-Job-Secret": secret},
               json=passed_result(3.0))
    assert late.status_code == 409 and "late report is kept as evidence" in late.json()["detail"]
    second.refresh_from_db()
    assert (second.status, second.agent, second.speedup) == (RunStatus.RUNNING, contest["b"], None)
    kept = AuditEntry.objects.get(action="run.late_report", object_id=str(second.pk))
    assert kept.after["result"]["timing"]["speedup"] == 3.0
    for pk in (first.pk, second.pk):
        assert not AuditEntry.objects.filter(action__in=["run.forged_report_refused", "run.progress_refused"],
                                             object_id=str(pk)).exists()


def test_a_worker_passes_over_a_job_its_host_may_not_read_and_takes_the_next(live_server, contest):
    """A queue of a site upgraded with jobs in it holds ids that name no GPU type: the host's Redis user
    may not read those jobs. Its worker leaves such an id in its claim list (the site queues the run again
    under a new id) and takes the next job, instead of stopping."""
    from rq.serializers import JSONSerializer as Json

    from profiler_agent.worker import job_claims
    from profiler_agent.worker.job_guard import GuardedJob

    run = submit_relu(live_server.url, contest)
    admin, queue_key = queueing.connection(), f"rq:queue:{run.queue_name}"
    unreadable = f"{queueing.job_id_prefix('')[:-1]}run-{run.pk}-0"
    admin.lpush(queue_key, unreadable)
    a = contest["a_redis"]
    job_claims.set_claim_list(agent_redis.claim_list(contest["a"].name))
    try:
        queue = job_claims.ClaimingQueue(run.queue_name, connection=a, serializer=Json)
        job, _ = job_claims.ClaimingQueue.dequeue_any([queue], None, connection=a, job_class=GuardedJob, serializer=Json)
    finally:
        job_claims._claim_list.clear()
    assert job.id == run.rq_job_id
    assert a.lrange(agent_redis.claim_list(contest["a"].name), 0, -1) == [unreadable.encode(), run.rq_job_id.encode()]


def test_a_change_of_an_agents_gpu_types_rewrites_its_redis_user_at_once(contest):
    user = contest["a_redis"].connection_pool.connection_kwargs["username"]
    take_c500 = ["LMOVE", f"rq:queue:{contest['c500'].queue_name}", agent_redis.claim_list(contest["a"].name),
                 "LEFT", "RIGHT"]
    admin = queueing.connection()
    assert b"no permissions" in admin.execute_command("ACL", "DRYRUN", user, *take_c500)
    contest["a"].gpu_types.add(contest["c500"])  # the organizer grants it c500 (the admin does the same)
    assert admin.execute_command("ACL", "DRYRUN", user, *take_c500) == b"OK"
    contest["a"].gpu_types.remove(contest["c500"])
    assert b"no permissions" in admin.execute_command("ACL", "DRYRUN", user, *take_c500)
