"""Second judging: no single untrusted host decides what the public sees (docs/architecture.md,
"Second judging").

A passed run that would change the public board (the season's `second_judging` setting says which:
a new best of the contestant, a figure in the season's top N best speedups, or one far from the
submission's other passed runs there; or every passed run) and that an untrusted host judged is
flagged `awaiting_second_judging` (timing_flags: it ranks nowhere, and only its owner and organizers
see its figure) and gets one confirming run (`Run.confirms`) on the same GPU type, queued like a
rejudge. The host that judged it may not start that run: its worker is refused with a short pause
and the run goes back to the front of its queue for another host. While no other host serving that
GPU type is online, the confirming run waits in the database instead (no job in Redis for the one
host to bounce), and the sweep queues it once one is (`release_waiting`). When the confirming run passes
within CONFIRMATION_TOLERANCE_PERCENT, both runs are `second_judging_confirmed` and rank (the ranked
figure is their median, ranked_runs); otherwise the first is `second_judging_disagrees` (and a
passed second one too) until an organizer clears one (services/clearing.clear_second_judging). A
trusted host's (`Agent.trusted`) results need no second judging, and it may confirm any other's.
"""
import statistics
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from submissions.models import AgentWorker, Run, RunStatus, SecondJudging, Standing, SubmissionMode, Verdict
from submissions.rules import timing_flags
from submissions.services import audit, run_states


def _other_ranked_speedups(run):
    runs = (Run.objects.filter(submission_id=run.submission_id, gpu_type_id=run.gpu_type_id, status=RunStatus.DONE,
                               verdict=Verdict.PASSED).exclude(pk=run.pk).only("verdict", "flags", "speedup"))
    return [r.speedup for r in runs if timing_flags.ranks(r) and r.speedup]


def reasons(run, agent):
    """Why this just-judged passed run must wait for a second judging; [] when its host's word is enough.
    Read before the standings take the run in, so "the board" is the board without it."""
    season = run.submission.issue.season
    # a test or benchmark run ranks nowhere: nothing to confirm
    if (season.second_judging == SecondJudging.OFF or run.submission.mode != SubmissionMode.RANKED
            or agent.trusted or run.confirms_id is not None
            or run.verdict != Verdict.PASSED or not run.speedup):
        return []
    if season.second_judging == SecondJudging.EVERY_PASSED:
        return ["every passed result of the season is judged twice"]
    why = []
    contestant_id = run.submission.contestant_id
    best = Standing.objects.filter(season=season, contestant_id=contestant_id).values_list("best_speedup", flat=True).first()
    if best is None or run.speedup > best:
        why.append(f"a new best of the contestant ({run.speedup:g}x, before: {best if best is not None else 'none'})")
    top_n = settings.SECOND_JUDGING_TOP_N
    ahead = Standing.objects.filter(season=season, best_speedup__gte=run.speedup).exclude(contestant_id=contestant_id)
    if top_n > 0 and ahead.count() < top_n:
        why.append(f"in the season's top {top_n} best speedups")
    others = _other_ranked_speedups(run)
    if others:
        median = statistics.median(others)
        if abs(run.speedup - median) > settings.SECOND_JUDGING_OUTLIER_PERCENT / 100 * median:
            why.append(f"more than {settings.SECOND_JUDGING_OUTLIER_PERCENT:g}% off the median {median:g}x of the "
                       "submission's other passed runs there")
    return why


def hold(run, agent, why):
    """Flag the (locked, just-judged) run provisional and queue its confirming run behind fresh runs."""
    before = list(run.flags)
    run.flags = before + [timing_flags.AWAITING_SECOND]
    run.save(update_fields=["flags"])
    confirming = Run.objects.create(submission_id=run.submission_id, gpu_type_id=run.gpu_type_id, job_secret_hash="",
                                    confirms=run, final_test=run.final_test)  # a final test's, in its queue
    if another_host_online(confirming, judged_by=agent.pk):
        run_states.admit(confirming, run.submission.contestant_id)
    else:
        run_states.wait_for_another_host(confirming)
    audit.record("run.awaiting_second_judging", run, actor_label=f"agent:{agent.name}", before={"flags": before},
                 after={"flags": run.flags, "confirming_run": confirming.pk}, reason="; ".join(why))
    return confirming


def agree(first, second):
    """Two speedups agree when they differ by at most the tolerance, as a share of the larger."""
    if not first or not second:
        return False
    return abs(first - second) <= settings.CONFIRMATION_TOLERANCE_PERCENT / 100 * max(first, second)


def settle(run, agent):
    """The (locked, finished) confirming run decides its provisional run: confirmed, or flagged for an
    organizer. A provisional run an organizer cleared meanwhile is left as it is."""
    provisional = Run.objects.select_for_update(of=("self",)).get(pk=run.confirms_id)
    if timing_flags.AWAITING_SECOND not in (provisional.flags or []):
        return None
    agreed = run.verdict == Verdict.PASSED and agree(provisional.speedup, run.speedup)
    outcome = timing_flags.SECOND_CONFIRMED if agreed else timing_flags.SECOND_DISAGREES
    before = list(provisional.flags)
    provisional.flags = [f for f in before if f != timing_flags.AWAITING_SECOND] + [outcome]
    provisional.save(update_fields=["flags"])
    if run.verdict == Verdict.PASSED:
        # a passed second judging that contradicts the first is no more certain than it: both wait
        run.flags = list(run.flags) + [outcome]
        run.save(update_fields=["flags"])
    audit.record("run.second_judging_confirmed" if agreed else "run.second_judging_disagrees", provisional,
                 actor_label=f"agent:{agent.name}", before={"flags": before},
                 after={"flags": provisional.flags, "confirming_run": run.pk, "verdict": run.verdict,
                        "speedup": run.speedup},
                 reason=f"second judging #{run.pk} on agent {agent.name}: {run.verdict}"
                        + (f" {run.speedup:g}x against {provisional.speedup:g}x" if run.speedup else ""))
    return outcome


def after_result(run, agent):
    """judging.record_result's hook, before the standings are refreshed: settle a second judging, or
    hold a result that needs one."""
    if run.confirms_id is not None:
        settle(run, agent)
        return
    why = reasons(run, agent)
    if why:
        hold(run, agent, why)


def _judged_first_by(run, agent):
    return run.confirms_id is not None and Run.objects.filter(pk=run.confirms_id, agent_id=agent.pk).exists()


def check_start(run, agent):
    """judging.check_startable's check: the host that judged a provisional run may not confirm it. Its
    worker pauses briefly, and the run goes back to the front of its queue (hand_back) for another host."""
    if _judged_first_by(run, agent):
        from submissions.services import fleet  # fleet imports judging, which calls this

        raise fleet.WorkerRefused(
            f"run {run.pk} is the second judging of run {run.confirms_id}, which agent {agent.name} judged; "
            "another host must judge it (it went back to the front of its queue)",
            why=f"second judging of run {run.confirms_id}: another host must judge it",
            pause_s=settings.CONFIRMATION_REFUSAL_PAUSE_SECONDS)


def another_host_online(run, judged_by=None):
    """Whether a worker of another host than the provisional run's could start this second judging now:
    a recent heartbeat, not draining, of an active, unquarantined agent granted the GPU type."""
    if judged_by is None:
        judged_by = Run.objects.filter(pk=run.confirms_id).values_list("agent_id", flat=True).first()
    fresh = timezone.now() - timedelta(seconds=settings.FLEET_WORKER_SILENT_SECONDS)
    return (AgentWorker.objects.filter(last_heartbeat_at__gte=fresh, draining=False, agent__is_active=True,
                                       agent__quarantine_reason="", agent__gpu_types=run.gpu_type_id)
            .exclude(agent_id=judged_by).exists())


def release_waiting(now=None):
    """The sweep's pass: second judgings waiting for another host are queued (at the front of their
    queue) once one is online. Returns how many."""
    released = 0
    for run_id in list(Run.objects.filter(status=RunStatus.WAITING, confirms__isnull=False).values_list("pk", flat=True)):
        with transaction.atomic():
            run = (Run.objects.select_for_update(of=("self",)).select_related("gpu_type")
                   .filter(pk=run_id, status=RunStatus.WAITING).first())
            if run is not None and another_host_online(run):
                run_states.queue(run, at_front=True)
                released += 1
    return released


def hand_back(run_id, agent, attempt):
    """After check_start refused this agent (its transaction rolled back): put the run's attempt, which
    the agent took off Redis, back at the front of its queue as a new attempt that spends none of the
    run's attempts. Idempotent: anything else (another refusal that handed the run back itself, a run
    started or finished meanwhile) is left alone. True when the run was handed back."""
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("gpu_type").filter(pk=run_id).first()
        if run is None or run.status != RunStatus.QUEUED or run.attempts != attempt or not _judged_first_by(run, agent):
            return False
        others = another_host_online(run)
        run_states.hand_back_unspent(run, actor_label=f"agent:{agent.name}", enqueue=others,
                                  reason=f"second judging of run #{run.confirms_id}: agent {agent.name} judged that run")
        if not others:  # nobody else could take it: it waits in the database, not in Redis for this host to bounce
            run_states.wait_for_another_host(run)
    return True
