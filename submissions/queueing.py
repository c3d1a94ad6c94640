"""Handing runs to the RQ queues that profiler agents read (`gpu.<type>`, on REDIS_URL), and work to
the site's own queue (on SITE_REDIS_URL, where no agent reaches).

The site names the job function by string: it never imports the agent package. Jobs are JSON
(RQ's JSONSerializer), the only format an agent's worker decodes.
"""
import re
from datetime import timedelta
from functools import lru_cache

import redis
from django.conf import settings
from rq import Queue
from rq.job import Job
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

JOB_FUNCTION = "profiler_agent.service.jobs.judge_run"
SERIALIZER = JSONSerializer


@lru_cache(maxsize=8)
def _connection(url):
    return redis.Redis.from_url(url)


def connection():
    """The agents' Redis (the `gpu.*` queues)."""
    return _connection(settings.REDIS_URL)


def site_connection():
    """The site's own Redis database (its `site` queue)."""
    return _connection(settings.SITE_REDIS_URL)


def judging_queue(queue_name):
    return Queue(queue_name, connection=connection(), serializer=SERIALIZER)


def site_queue():
    return Queue(settings.SITE_QUEUE_NAME, connection=site_connection(), serializer=SERIALIZER)


def job_id(run_id, attempt):
    """`gpu-run-7-2`: the queue prefix (in RQ's job id alphabet) keeps job ids apart between sites, or
    test runs, that share one Redis; without it they would overwrite each other's job hashes."""
    return f"{re.sub(r'[^A-Za-z0-9_-]', '-', settings.GPU_QUEUE_PREFIX)}run-{run_id}-{attempt}"


def enqueue_judging(queue_name, job_id, kwargs, *, at_front=False):
    """The job names the run and its attempt only (`{"run_id", "attempt"}`): see judging.enqueue_run."""
    judging_queue(queue_name).enqueue(
        JOB_FUNCTION,
        kwargs=kwargs,
        job_id=job_id,
        job_timeout=settings.JUDGE_JOB_TIMEOUT_SECONDS,
        result_ttl=24 * 3600,
        failure_ttl=7 * 24 * 3600,
        description=f"judge {job_id}",
        at_front=at_front,
    )


def job_is_alive(queue_name, job_id) -> bool:
    """Whether the job is still waiting in its queue or being worked on there. Any agent host can
    write a job's hash and the queue list, so the status field alone proves nothing: a "queued" job
    must be in the queue's list, a "started" one in its started registry. Malformed data counts as
    lost (the sweeper hands the run to the queue again), never as an error."""
    redis_connection = connection()
    status = (redis_connection.hget(Job.key_for(job_id), "status") or b"").decode(errors="replace")
    if status == "queued":
        return redis_connection.lpos(judging_queue(queue_name).key, job_id) is not None
    if status == "started":
        return job_id in StartedJobRegistry(queue_name, connection=redis_connection, serializer=SERIALIZER)
    return False


def live_job_ids(queue_name, now_ts=None):
    """The ids of the jobs of a queue that are waiting in its list, being dequeued (RQ's intermediate
    list) or being worked on with a fresh heartbeat (started registry entries whose score, the
    worker's promise of its next heartbeat, is not past). One atomic round trip, whatever the backlog:
    a job moving from the list to the registry is seen in one of them, never in neither."""
    import time

    queue = judging_queue(queue_name)
    registry = StartedJobRegistry(queue_name, connection=connection(), serializer=SERIALIZER)
    with connection().pipeline(transaction=True) as pipe:
        pipe.lrange(queue.key, 0, -1)
        pipe.lrange(queue.intermediate_queue_key, 0, -1)
        pipe.zrange(registry.key, 0, -1, withscores=True)
        waiting, dequeued, started = pipe.execute()
    now_ts = time.time() if now_ts is None else now_ts
    alive = {raw.decode(errors="replace") for raw in (*waiting, *dequeued)}
    # registry entries are "<job id>:<execution id>"
    alive |= {raw.decode(errors="replace").rsplit(":", 1)[0] for raw, score in started if score >= now_ts}
    return alive


def queue_position(queue_name, job_id):
    """1-based position of a job in its queue, or None when it is not waiting there."""
    job_ids = judging_queue(queue_name).get_job_ids()
    try:
        return job_ids.index(job_id) + 1
    except ValueError:
        return None


def queue_length(queue_name):
    return connection().llen(judging_queue(queue_name).key)


def remove_job(queue_name, job_id):
    """Take a job off its queue and delete its hash (a cancelled run). An agent that popped it already
    is refused at `start`, so a job that escapes this is harmless."""
    with connection().pipeline() as pipe:
        pipe.lrem(judging_queue(queue_name).key, 0, job_id)
        pipe.delete(Job.key_for(job_id))
        pipe.execute()


def enqueue_site_job(function, *, kwargs, description, delay_s=0):
    """Work for the site's own RQ worker (`manage.py rqworker site --with-scheduler`), e.g. fetching a
    pull request. A delayed job waits in RQ's scheduled registry until the worker's scheduler moves it."""
    queue = site_queue()
    options = dict(kwargs=kwargs, job_timeout=settings.PR_FETCH_TIMEOUT_SECONDS * 3 + 60,
                   result_ttl=24 * 3600, failure_ttl=7 * 24 * 3600, description=description)
    if delay_s > 0:
        return queue.enqueue_in(timedelta(seconds=delay_s), function, **options)
    return queue.enqueue(function, **options)
