"""Judging runs: fan out to GPU types, who may start and report a run, and recording results (the
status changes themselves: run_states; lost runs: recovery)."""
import logging
import math

from django.conf import settings
from django.db import transaction

from submissions import queueing
from submissions.models import Contestant, Run, RunStatus, Submission, SubmissionMode, Verdict, hash_secret
from submissions.rules import timing_flags
from submissions.services import abuse, audit, confirming, hardware, pr_comments, run_states, standings

log = logging.getLogger(__name__)


class RunConflict(Exception):
    """The run is finished, or being judged by another agent: a start or report changes nothing."""


class AgentRefused(Exception):
    """This agent may not do this to this run (stale attempt, GPU type not served, not the agent that
    started it, wrong secret). Nothing was changed."""


class JobSecretMismatch(AgentRefused):
    """The job secret is not the one of the run's current attempt."""


class NotHandedOut(AgentRefused):
    """The run's job was not handed to this agent's host by its queue (still queued, or taken by another
    host): only the host whose claim list holds the job may start it (queueing.claim_list_key)."""


class LateReport(Exception):
    """A report from an earlier attempt's own agent, with that attempt's secret, after the site handed the
    attempt back (its agent fell silent, say behind a broken link) or an organizer cancelled it while it
    was judged: late, not forged."""

    def __init__(self, run, attempt):
        if run.verdict == Verdict.CANCELLED and attempt == run.attempts:
            message = f"run {run.pk}: attempt {attempt} was cancelled while it was judged; this late report is kept as evidence"
        else:
            message = (f"run {run.pk}: attempt {attempt} was handed back and the run judged again "
                       f"(now attempt {run.attempts}); this late report is kept as evidence")
        super().__init__(message)
        self.attempt = attempt


def create_runs(submission, rejudge=None, gpu_types=None, *, final_test=False):
    """One run per GPU type of the submission's season that can judge it (hardware.plan_for: never a
    CUDA bundle on the CPU type), each enqueued after the commit or kept waiting behind the contestant's
    earlier runs (run_states.admit). `gpu_types`: the plan's, when the caller has it already.
    `final_test`: a final system test's runs, queued before every other (scheduling)."""
    if gpu_types is None:
        gpu_types = hardware.plan_for(submission.issue.season, hardware.stored_files(submission)).judged
    runs = []
    for gpu_type in gpu_types:
        run = Run.objects.create(submission=submission, gpu_type=gpu_type, job_secret_hash="", rejudge=rejudge,
                                 final_test=final_test)
        run_states.admit(run, submission.contestant_id)
        runs.append(run)
    return runs


def judging_options(run=None):
    """The limits an agent judges a run under, and its submission's mode: they come from the site, never
    from the queue. A test submission's run is judged for correctness only (`correctness_only`: no
    timing, no confirmation, no self-test); a profile submission's too, then profiled (`profile`: the caps
    of the report; an agent too old to know the mode still judges only correctness, and sends no report)."""
    options = {"run_timeout_s": settings.JUDGE_TIMEOUT_SECONDS, "compile_timeout_s": settings.JUDGE_COMPILE_TIMEOUT_SECONDS}
    if run is not None and run.submission.mode != SubmissionMode.RANKED:
        options["mode"] = run.submission.mode
        options["correctness_only"] = run.submission.mode in (SubmissionMode.TEST, SubmissionMode.PROFILE)
    if run is not None and run.submission.mode == SubmissionMode.PROFILE:
        options["profile"] = {"kernels_per_model": settings.PROFILE_KERNELS_PER_MODEL,
                              "timeout_s": settings.PROFILE_TIMEOUT_SECONDS,
                              "max_file_bytes": settings.PROFILE_FILE_MAX_BYTES}
    return options


def agent_serves(agent, gpu_type):
    return agent.gpu_types.filter(pk=gpu_type.pk).exists()


def handed_back_attempt(run, agent, secret):
    """The earlier attempt of the run that this agent started with this secret, or None."""
    if not secret:
        return None
    digest = hash_secret(secret)
    return next((item["attempt"] for item in run.handed_back or []
                 if item.get("agent_id") == agent.pk and item.get("secret_hash") == digest), None)


def check_agent_access(run, agent, secret):
    """Only the agent that started the run's current attempt, with that attempt's secret. An earlier
    attempt's own agent and secret is a late report (LateReport), not a forged one."""
    current = run.agent_id == agent.pk and secret and run.job_secret_hash and hash_secret(secret) == run.job_secret_hash
    if current:
        return
    late = handed_back_attempt(run, agent, secret)
    if late is not None:
        raise LateReport(run, late)
    if run.agent_id != agent.pk:  # a new attempt unbinds the run (run_states.queue)
        raise AgentRefused(f"run {run.pk} was not started by agent {agent.name}")
    raise JobSecretMismatch(f"the job secret does not match run {run.pk}'s current attempt")


def check_handed_out(run, agent):
    """The queued run's job is in this agent's claim list: its queue handed it to this host."""
    from submissions.services import agent_redis

    claims = agent_redis.claim_list(agent.name)
    if claims is not None and run.rq_job_id and queueing.is_claimed(claims, run.rq_job_id):
        return
    if run.rq_job_id and queueing.is_waiting(run.queue_name, run.rq_job_id):
        raise NotHandedOut(f"run {run.pk}'s job is still waiting in its queue: start only the jobs your queue hands you")
    raise NotHandedOut(f"run {run.pk}'s job was not handed to agent {agent.name} by its queue")


def check_startable(run, agent, attempt, *, require_claim=False):
    """Whether this agent may start this attempt of the (locked) run: raises RunConflict (finished,
    waiting, or running under another agent) or AgentRefused (stale attempt, GPU type not served, and
    with `require_claim` (the agent API) a queued run whose job the queue did not hand this host)."""
    if run.status == RunStatus.DONE:
        raise RunConflict(f"run {run.pk} is already finished ({run.verdict})")
    if agent.quarantine_reason:
        raise AgentRefused(f"agent {agent.name} is quarantined ({agent.quarantine_reason}); an organizer resumes it")
    if attempt != run.attempts:
        raise AgentRefused(f"stale attempt: run {run.pk} is at attempt {run.attempts}, not {attempt}")
    if not agent_serves(agent, run.gpu_type):
        raise AgentRefused(f"agent {agent.name} does not serve GPU type {run.gpu_type.slug} "
                           f"(an organizer grants it: manage.py create_agent {agent.name} --gpu-type {run.gpu_type.slug})")
    if run.status == RunStatus.RUNNING and run.agent_id not in (None, agent.pk):
        raise RunConflict(f"run {run.pk} is already being judged by another agent")
    if run.status == RunStatus.WAITING:
        raise RunConflict(f"run {run.pk} is waiting for a queue slot; it was never handed out")
    if require_claim and run.status == RunStatus.QUEUED:
        check_handed_out(run, agent)
    confirming.check_start(run, agent)  # a second judging goes to another host (fleet.WorkerRefused)


def lock_run(run_id):
    # the run's row only (`of`): locking its GPU type's row too would serialize every start and every
    # new run of that type, and deadlock a start against a submission of the same contestant
    return Run.objects.select_for_update(of=("self",)).select_related("gpu_type", "submission__issue__season").get(pk=run_id)


@transaction.atomic
def start_run(run_id, agent, attempt, *, require_claim=False):
    """Bind the run's current attempt to this agent and return (run, a fresh secret for it).
    Raises Run.DoesNotExist, RunConflict (finished, or running under another agent) or AgentRefused
    (stale attempt, GPU type not served, not handed out with `require_claim`). A repeated start by the
    same agent re-issues the secret. Agents that name their worker start through
    services.fleet.start_on_worker."""
    run = lock_run(run_id)
    check_startable(run, agent, attempt, require_claim=require_claim)
    return run_states.start(run, agent)


def record_progress(run_id, agent, secret, attempt, stage):
    """The stage the agent judging this attempt has reached (informative: shown on the submission's
    page). Raises AgentRefused (not this agent, secret or attempt) or RunConflict (not running)."""
    run = Run.objects.get(pk=run_id)
    try:
        check_agent_access(run, agent, secret)
    except LateReport as exc:
        raise RunConflict(str(exc).replace("this late report is kept as evidence", "its progress is not kept"))
    if attempt != run.attempts:
        raise AgentRefused(f"stale attempt: run {run.pk} is at attempt {run.attempts}, not {attempt}")
    # only while this attempt runs: a report that crosses the result (or a new attempt) changes nothing
    updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING, attempts=attempt,
                                 job_secret_hash=run.job_secret_hash).update(stage=stage)
    if not updated:
        raise RunConflict(f"run {run.pk} is not running this attempt; its progress is not kept")


def record_refusal(run_id, agent, action, reason):
    """Audit what an agent was refused (in its own transaction: the refused one changed nothing)."""
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        audit.record(action, run, actor_label=f"agent:{agent.name}", reason=reason)
    log.warning("agent %s refused on run %s (%s): %s", agent.name, run_id, action, reason)


def record_late_report(run_id, agent, late, result):
    """Keep a late report that did not become the verdict (another attempt judges or judged the run) as
    evidence in the audit trail, with its result."""
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        audit.record("run.late_report", run, actor_label=f"agent:{agent.name}", after={"result": result},
                     reason=f"{late}; the run is {run.status} at attempt {run.attempts}")
    log.info("agent %s reported run %s late (attempt %s)", agent.name, run_id, late.attempt)


def _speedup(result):
    """The result's speedup, never above the kernels' record of both models (confirmation.kernel_speedup):
    agents lower it themselves; a result of an agent that did not is capped here, so clearing a
    `timing_unconfirmed` flag can never rank a figure the GPU's record does not support. With several
    timed input cases each confirmed on its own (harness 1.7), the bound is the geometric mean of each
    case's speedup within its own record; otherwise the first case's record bounds the mean."""
    timing = result.get("timing") or {}
    speedup, bound = timing.get("speedup"), (timing.get("confirmation") or {}).get("kernel_speedup")
    cases = list((timing.get("cases") or {}).values())
    if len(cases) > 1 and all(isinstance(case, dict) and case.get("speedup") and case.get("kernel_speedup")
                              for case in cases):
        bound = math.exp(sum(math.log(min(case["speedup"], case["kernel_speedup"])) for case in cases) / len(cases))
    return min(speedup, bound) if speedup is not None and bound else speedup


def _median(result, side):
    return ((result.get("timing") or {}).get(side) or {}).get("median_ms")


def given_up_by_sweeper(run):
    """Whether the run was closed by the sweeper (run_states.give_up: no agent's result, the attempt's agent
    and secret kept) rather than judged: the report of that attempt, arriving late, is its judgement."""
    return run.status == RunStatus.DONE and run.verdict == Verdict.INTERNAL_ERROR and run.result is None


def _submitted_again(run):
    """The contestant's later submission of the same kernel in the season, allowed because this one was
    never judged (submitting.earlier_identical): judging both would rank the luckier sample. Under the
    contestant's row lock (after the run's, the scheduling order), so a submission racing this report
    either sees it (and is refused as already judged) or is seen here."""
    submission = run.submission
    Contestant.objects.select_for_update().filter(pk=submission.contestant_id).first()
    if not submission.kernel_digest:
        return None
    if submission.mode != SubmissionMode.RANKED:
        return None
    return (Submission.objects.filter(contestant_id=submission.contestant_id, issue__season_id=submission.issue.season_id,
                                      kernel_digest=submission.kernel_digest, created_at__gte=submission.created_at,
                                      mode=SubmissionMode.RANKED)
            .exclude(pk=submission.pk).order_by("created_at").first())


@transaction.atomic
def record_result(run_id, agent, secret, result):
    """Store an agent's report. A finished run refuses it (idempotent), unless the sweeper gave it up while
    its agent was still judging: then this attempt's report is its verdict. An internal error is retried."""
    run = Run.objects.select_for_update(of=("self",)).select_related("submission__issue__season").get(pk=run_id)
    try:
        check_agent_access(run, agent, secret)
    except LateReport as late:
        if run.status != RunStatus.QUEUED:
            raise  # kept as evidence by record_late_report, in a transaction of its own
        # nobody judges the run yet: the late judgement is its verdict, and the queued job is withdrawn
        audit.record("run.late_report", run, actor_label=f"agent:{agent.name}", after={"result": result},
                     reason=f"attempt {late.attempt} reported after it was handed back; no later attempt had "
                            "started, so this report is the verdict")
        queue_name, job_id = run.queue_name, run.rq_job_id
        transaction.on_commit(lambda: queueing.remove_job(queue_name, job_id), robust=True)
        run.agent = agent
    if run.status == RunStatus.DONE and not given_up_by_sweeper(run):
        raise RunConflict(f"run {run.pk} was already reported ({run.verdict}); this report changes nothing")
    if run.status == RunStatus.DONE:
        twin = _submitted_again(run)
        if twin is not None:
            raise RunConflict(f"run {run.pk} was given up and its bundle submitted again as #{twin.pk}, which is "
                              "judged instead; this report changes nothing")
    previous_verdict = run.verdict
    status = result["status"]
    if status == Verdict.INTERNAL_ERROR and run.spent_attempts < settings.RUN_MAX_ATTEMPTS:
        audit.record("run.retried", run, actor_label=f"agent:{agent.name}", after={"result": result},
                     reason="internal error of the platform; judged again")
        run.job_secret_hash = ""  # this attempt reported: nothing of it may come late
        run_states.queue(run)
        return run
    metrics = result.get("metrics") or {}
    run_states.finish(
        run, status, agent=agent, result=result,
        flags=timing_flags.with_noise_flag(result, list(result.get("flags") or [])),
        reference_median_ms=_median(result, "reference"), candidate_median_ms=_median(result, "candidate"),
        speedup=_speedup(result) if status == Verdict.PASSED else None, tflops=metrics.get("tflops"),
        bandwidth_gbs=metrics.get("bandwidth_gbs"), device_name=((result.get("device") or {}).get("name") or "")[:200])
    audit.record("run.verdict", run, actor_label=f"agent:{agent.name}", before={"verdict": previous_verdict},
                 after={"verdict": run.verdict, "speedup": run.speedup, "flags": run.flags})
    confirming.after_result(run, agent)  # second judging: hold a result that needs one, or settle one
    submission = run.submission
    standings.refresh_for(submission.issue.season, submission.contestant, actor_label=f"agent:{agent.name}")
    if not submission.runs.exclude(status=RunStatus.DONE).exists():
        abuse.check_after_judging(submission)
        if submission.pr_url:
            # The bot's reply on the PR, once everything is judged and committed: a job of the site's
            # worker, so a slow host never holds this (the agent's) request open.
            submission_id = submission.pk
            transaction.on_commit(lambda: pr_comments.queue_verdicts(submission_id), robust=True)
    return run
