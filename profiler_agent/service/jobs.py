"""The job function's wire name, `profiler_agent.service.jobs.judge_run` (protocol.vocabulary.JOB_FUNCTION):
queued jobs and deployed sites name it, and RQ imports a job's function by that name. The judging
itself is profiler_agent.worker.judge_job's."""

from profiler_agent.worker.judge_job import judge_run

__all__ = ["judge_run"]
