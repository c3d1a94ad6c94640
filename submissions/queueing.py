"""Handing runs to the RQ queues that profiler agents read (`gpu.<type>`, on REDIS_URL), and work to
the site's own queue (on SITE_REDIS_URL, where no agent reaches).

The site names the job function by its wire name (agent_protocol.JOB_FUNCTION): it never imports the
agent package. Jobs are JSON
(RQ's JSONSerializer), the only format an agent's worker decodes.
"""
import re
from datetime import timedelta
from functools import lru_cache

import redis
from django.conf import settings
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from submissions import agent_protocol

JOB_FUNCTION = agent_protocol.JOB_FUNCTION
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


def job_id_prefix(gpu_slug):
    """`gpu-h100_`: the start of every job id of a GPU type. The queue prefix (in RQ's job id alphabet)
    keeps job ids apart between sites, or test runs, that share one Redis; the GPU type's slug (no
    underscore: models.GPU_SLUG) lets a host's Redis user reach the job hashes of its granted types only
    (`rq:job:gpu-h100_*`: the first underscore ends the slug, so h100's pattern never matches h100-x's)."""
    return f"{re.sub(r'[^A-Za-z0-9_-]', '-', settings.GPU_QUEUE_PREFIX)}{gpu_slug}_"


def job_id(run_id, attempt, gpu_slug):
    """`gpu-h100_run-7-2`: a run's attempt on its GPU type."""
    return f"{job_id_prefix(gpu_slug)}run-{run_id}-{attempt}"


def claim_list_key(redis_username):
    """The list a host's workers move the jobs they take into (profiler_agent/worker/job_claims.py): only
    that host's Redis user may move ids into it, so a job there was handed to that host by its queue."""
    return f"rq:claimed:{settings.GPU_QUEUE_PREFIX}{redis_username}"


def is_claimed(claim_key, job_id):
    return connection().lpos(claim_key, job_id) is not None


def release_claim(claim_key, job_id):
    """The site took the job out of the host's claim list (started, refused or handed back)."""
    connection().lrem(claim_key, 0, job_id)


def claimed_job_ids(claim_keys):
    """{claim list: [job ids]} in one round trip, whatever the number of hosts."""
    claim_keys = list(claim_keys)
    with connection().pipeline(transaction=False) as pipe:
        for key in claim_keys:
            pipe.lrange(key, 0, -1)
        lists = pipe.execute()
    return {key: [raw.decode(errors="replace") for raw in ids] for key, ids in zip(claim_keys, lists)}


def is_waiting(queue_name, job_id):
    return connection().lpos(judging_queue(queue_name).key, job_id) is not None


def enqueue_judging(queue_name, job_id, kwargs, *, at_front=False):
    """The job names the run and its attempt only (`{"run_id", "attempt"}`): see run_states.queue."""
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


def waiting_job_ids(queue_name):
    """The ids of the jobs waiting in a queue's list (only the site pushes there; hosts may only move
    ids from its head into their claim lists)."""
    return {raw.decode(errors="replace") for raw in connection().lrange(judging_queue(queue_name).key, 0, -1)}


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
