"""Handing runs to the RQ queues that profiler agents read (`gpu.<type>`, on REDIS_URL), and work to
the site's own queue (on SITE_REDIS_URL, where no agent reaches).

The site names the job function by string: it never imports the agent package. Jobs are JSON
(RQ's JSONSerializer), the only format an agent's worker decodes.
"""
from functools import lru_cache

import redis
from django.conf import settings
from rq import Queue
from rq.job import Job
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


def job_is_alive(job_id) -> bool:
    """Whether the job still sits in Redis waiting or being worked on. Reads its status field alone:
    any agent host can write that hash, and a malformed one must not stop the sweeper."""
    status = connection().hget(Job.key_for(job_id), "status")
    return status is not None and status.decode(errors="replace") in {"queued", "started", "deferred", "scheduled"}


def queue_position(queue_name, job_id):
    """1-based position of a job in its queue, or None when it is not waiting there."""
    job_ids = judging_queue(queue_name).get_job_ids()
    try:
        return job_ids.index(job_id) + 1
    except ValueError:
        return None


def enqueue_site_job(function, *, kwargs, description):
    """Work for the site's own RQ worker (`manage.py rqworker site`), e.g. fetching a pull request."""
    site_queue().enqueue(
        function, kwargs=kwargs, job_timeout=settings.PR_FETCH_TIMEOUT_SECONDS * 3 + 60,
        result_ttl=24 * 3600, failure_ttl=7 * 24 * 3600, description=description)
