"""Handing runs to the RQ queues that profiler agents read (`gpu.<type>`, on REDIS_URL), and work to
the site's own queue (on SITE_REDIS_URL, where no agent reaches).

The site names the job function by string: it never imports the agent package. Jobs are JSON
(RQ's JSONSerializer), the only format an agent's worker decodes.
"""
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


def enqueue_judging(queue_name, job_id, kwargs):
    """The job names the run and its attempt only (`{"run_id", "attempt"}`): see judging.enqueue_run."""
    judging_queue(queue_name).enqueue(
        JOB_FUNCTION,
        kwargs=kwargs,
        job_id=job_id,
        job_timeout=settings.JUDGE_JOB_TIMEOUT_SECONDS,
        result_ttl=24 * 3600,
        failure_ttl=7 * 24 * 3600,
        description=f"judge {job_id}",
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


def queue_position(queue_name, job_id):
    """1-based position of a job in its queue, or None when it is not waiting there."""
    job_ids = judging_queue(queue_name).get_job_ids()
    try:
        return job_ids.index(job_id) + 1
    except ValueError:
        return None


def enqueue_site_job(function, *, kwargs, description, delay_s=0):
    """Work for the site's own RQ worker (`manage.py rqworker site --with-scheduler`), e.g. fetching a
    pull request. A delayed job waits in RQ's scheduled registry until the worker's scheduler moves it."""
    queue = site_queue()
    options = dict(kwargs=kwargs, job_timeout=settings.PR_FETCH_TIMEOUT_SECONDS * 3 + 60,
                   result_ttl=24 * 3600, failure_ttl=7 * 24 * 3600, description=description)
    if delay_s > 0:
        return queue.enqueue_in(timedelta(seconds=delay_s), function, **options)
    return queue.enqueue(function, **options)
