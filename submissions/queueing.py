"""Handing runs to the RQ queues that profiler agents read (`gpu.<type>`).

The site names the job function by string: it never imports the agent package.
"""
import django_rq
from django.conf import settings
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job

JOB_FUNCTION = "profiler_agent.service.jobs.judge_run"


def connection():
    return django_rq.get_connection("default")


def enqueue_judging(queue_name, job_id, kwargs):
    queue = Queue(queue_name, connection=connection())
    queue.enqueue(
        JOB_FUNCTION,
        kwargs=kwargs,
        job_id=job_id,
        job_timeout=settings.JUDGE_JOB_TIMEOUT_SECONDS,
        result_ttl=24 * 3600,
        failure_ttl=7 * 24 * 3600,
        description=f"judge {job_id}",
    )


def job_is_alive(job_id) -> bool:
    """Whether the job still sits in Redis waiting or being worked on."""
    try:
        job = Job.fetch(job_id, connection=connection())
    except NoSuchJobError:
        return False
    return job.get_status(refresh=False) in {"queued", "started", "deferred", "scheduled"}


def queue_position(queue_name, job_id):
    """1-based position of a job in its queue, or None when it is not waiting there."""
    job_ids = Queue(queue_name, connection=connection()).get_job_ids()
    try:
        return job_ids.index(job_id) + 1
    except ValueError:
        return None


def enqueue_site_job(function, *, kwargs, description):
    """Work for the site's own RQ worker (`manage.py rqworker site`), e.g. fetching a pull request."""
    Queue(settings.SITE_QUEUE_NAME, connection=connection()).enqueue(
        function, kwargs=kwargs, job_timeout=settings.PR_FETCH_TIMEOUT_SECONDS * 3 + 60,
        result_ttl=24 * 3600, failure_ttl=7 * 24 * 3600, description=description)
