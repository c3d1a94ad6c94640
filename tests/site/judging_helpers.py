"""Submitting and reporting runs through the real services, Redis jobs included (no agent process)."""
import copy

from submissions.bundles import build_bundle
from submissions.services import judging, submitting

PASSED = {
    "schema": 1, "status": "passed", "flags": [],
    "device": {"kind": "cpu", "name": "Test CPU"},
    "correctness": {"passed": True, "trials": 4, "max_abs_err": 0.0, "max_rel_err": 0.0, "atol": 1e-4, "rtol": 1e-4},
    "timing": {"reference": {"median_ms": 2.0}, "candidate": {"median_ms": 1.0}, "speedup": 2.0},
    "metrics": {"flops": 4096, "bytes": 1024, "tflops": 0.5, "bandwidth_gbs": 1.5},
    "variants": {}, "logs": {"compile": "", "stdout": "ok", "stderr": ""},
}


def passed_result(speedup=2.0, *, tflops=0.5, bandwidth_gbs=1.5, llm_variant=None):
    result = copy.deepcopy(PASSED)
    result["timing"]["speedup"] = speedup
    result["timing"]["candidate"]["median_ms"] = 2.0 / speedup
    result["metrics"].update(tflops=tflops, bandwidth_gbs=bandwidth_gbs)
    if llm_variant:
        result["variants"] = {"cudacode_ori": {"status": llm_variant}}
    return result


def submit(capture, contestant, issue, files, **kwargs):
    """create_submission with its on-commit enqueues run, so the jobs really sit in Redis."""
    with capture(execute=True):
        return submitting.create_submission(contestant, issue, build_bundle(files), **kwargs)


def report_all(submission, agent, result):
    """Start every unfinished run of the submission and report `result` for it, as the agent would."""
    for run in submission.runs.exclude(status="done").order_by("pk"):
        _, secret = judging.start_run(run.pk, agent, run.attempts)
        judging.record_result(run.pk, agent, secret, copy.deepcopy(result))


def hand_out(run, agent):
    """What the agent host's worker does when its queue hands it the run's job (profiler_agent/service/
    claims.py): the job id moves from the queue into the host's claim list, where `start` looks for it."""
    from submissions import queueing
    from submissions.models import RunStatus
    from submissions.services import agent_redis

    run.refresh_from_db()
    if run.status != RunStatus.QUEUED:
        return
    connection = queueing.connection()
    connection.lrem(f"rq:queue:{run.queue_name}", 0, run.rq_job_id)
    connection.rpush(agent_redis.claim_list(agent.name), run.rq_job_id)


def hand_out_to_token(run, token):
    from submissions.models import Agent, hash_secret

    hand_out(run, Agent.objects.get(token_hash=hash_secret(token)))


def accept(submission, organizer_user):
    """An organizer accepts the submission, judged or not (the override says why): the public board's
    best speedup counts accepted samples only."""
    from submissions.services import reviewing

    reviewing.review_submission(submission, organizer_user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: accepted whatever its judging")
