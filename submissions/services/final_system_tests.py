"""A season's final system test: after its end, an organizer has every contestant's counted submission
(the latest accepted one per issue, as the standings count it) judged once more on every GPU type that
judges it. Every judging draws a fresh secret seed for its inputs (the agent's judge_bundle), so these
runs see inputs no earlier run saw. The runs are a rejudge's (its progress page), on a queue of their
own that agents read before every other (`gpu.<type>.final`, scheduling): after the season's end
nothing should hold up its results. While they run the boards show the provisional standings, and
once the last is done the final standings come from them alone (final_test_reads). Both standings are
kept for the comparison."""
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from submissions import board_versions, season_access_reads
from submissions.models import (Contestant, FinalSystemTest, Rejudge, RejudgeScope, Run, RunStatus, Season,
                                Standing, Submission, Verdict)
from submissions.rules import timing_flags
from submissions.rules.ranking import rule_of
from submissions.services import audit, judging, reasons, standings

ACTOR_LABEL = "final system test"


class FinalTestRefused(ValueError):
    pass


def snapshot(season):
    """The season's standings as its board ranks them now, as plain rows."""
    rows = rule_of(season).assign_ranks(list(Standing.objects.filter(season=season).select_related("contestant")))
    return [{"contestant_id": s.contestant_id, "contestant": s.contestant.display_name, "rank": s.rank,
             "accepted_count": s.accepted_count, "total_score": s.total_score, "best_speedup": s.best_speedup}
            for s in rows]


def counted_submissions(season):
    """Every contestant's counted submissions of the season (none of a banned contestant's: no board shows them)."""
    ids = []
    for contestant in Contestant.objects.filter(submissions__issue__season=season).distinct().order_by("pk"):
        if not season_access_reads.is_banned(season, contestant):
            ids += standings.counted_submission_ids(season, contestant)
    return list(Submission.objects.filter(pk__in=ids).select_related("issue__season", "contestant").order_by("pk"))


@transaction.atomic
def start(season, reason, *, actor=None, actor_label=""):
    """Queue the final system test's runs; returns the FinalSystemTest. Refused before the season's end,
    without a reason, a second time, and when no submission counts."""
    reason = (reason or "").strip()
    if not reason:
        raise FinalTestRefused(_("a final system test needs a reason (it is kept in the audit trail)"))
    if reasons.too_long(reason):
        raise FinalTestRefused(reasons.too_long(reason))
    season = Season.objects.select_for_update().get(pk=season.pk)  # one start at a time per season
    if not season.has_ended:
        raise FinalTestRefused(_("season %(season)s has not ended: its final system test starts after its end")
                               % {"season": season.code})
    earlier = FinalSystemTest.objects.filter(season=season).first()
    if earlier is not None:
        raise FinalTestRefused(_("season %(season)s's final system test was started already (%(when)s)")
                               % {"season": season.code, "when": earlier.created_at.isoformat(timespec="minutes")})
    submissions = counted_submissions(season)
    if not submissions:
        raise FinalTestRefused(_("season %(season)s has no accepted submission to test") % {"season": season.code})
    batch = Rejudge.objects.create(scope=RejudgeScope.SEASON, target=season.code, requested_by=actor, reason=reason)
    test = FinalSystemTest.objects.create(season=season, rejudge=batch, started_by=actor, reason=reason,
                                          provisional=snapshot(season))
    runs = [run for submission in submissions for run in judging.create_runs(submission, rejudge=batch, final_test=True)]
    audit.record("season.final_system_test_started", season, actor=actor, actor_label=actor_label, reason=reason,
                 after={"final_system_test": test.pk, "rejudge": batch.pk, "submissions": [s.pk for s in submissions],
                        "runs": [r.pk for r in runs]})
    if not runs:  # no GPU type of the season can judge them: nothing will come
        finish(test)
    return test


def after_run_done(run):
    """A rejudge's run or a second judging is done: once that commits, the final system test it may
    belong to is settled (after the commit: a passed run's second judging is created later in the same
    report, and two last runs finishing at once each see the other's when theirs has committed)."""
    transaction.on_commit(settle_unfinished, robust=True)


def pending_runs(test):
    """Its runs, and their second judgings, that are not done yet."""
    return Run.objects.filter(Q(rejudge_id=test.rejudge_id) | Q(confirms__rejudge_id=test.rejudge_id)).exclude(
        status=RunStatus.DONE)


def settle_unfinished():
    """Finishes every final system test whose runs are all done (after a run's report; the sweeper's pass
    redoes it should that fail); returns how many it finished."""
    finished = 0
    for pk in FinalSystemTest.objects.filter(finished_at__isnull=True).values_list("pk", flat=True):
        with transaction.atomic():
            test = FinalSystemTest.objects.select_for_update().select_related("season", "rejudge").get(pk=pk)
            if test.finished_at is None and not pending_runs(test).exists():
                finish(test)
                finished += 1
    return finished


@transaction.atomic
def finish(test):
    """Every run is done: the season's standings are recomputed from the final runs and kept as the final ones."""
    now = timezone.now()
    test.finished_at = now
    test.save(update_fields=["finished_at"])
    season = test.season
    contestants = Contestant.objects.filter(submissions__issue__season=season).distinct().order_by("pk")
    for contestant in contestants:
        standings.refresh_for(season, contestant, actor_label=ACTOR_LABEL, reason="final system test finished")
    Season.objects.filter(pk=season.pk).update(final_standings_at=now)
    season.final_standings_at = now
    board_versions.bump(season.pk)  # every board of the season now says "final"
    test.final = snapshot(season)
    test.save(update_fields=["final"])
    judged, total, failed = progress(test)
    audit.record("season.final_system_test_finished", season, actor_label=ACTOR_LABEL, reason=test.reason,
                 after={"final_system_test": test.pk, "runs": total, "failed_runs": failed})


def progress(test):
    """(runs judged, all runs, judged runs that did not pass) of the final system test."""
    runs = test.rejudge.runs.all()
    done = runs.filter(status=RunStatus.DONE)
    return done.count(), runs.count(), done.exclude(verdict=Verdict.PASSED).count()


def failed_runs(test):
    return (test.rejudge.runs.filter(status=RunStatus.DONE).exclude(verdict=Verdict.PASSED)
            .select_related("submission__issue", "submission__contestant", "gpu_type").order_by("pk"))


def comparison(test):
    """Per contestant: rank and best speedup before (provisional) and after (final), the provisional order
    first, then anyone only the final standings hold; and the final runs that passed but whose time is
    not confirmed (they rank no speedup until an organizer clears it: the page says so)."""
    final = {row["contestant_id"]: row for row in test.final}
    held = _unconfirmed_final_runs(test)
    rows = []
    for before in test.provisional:
        after = final.pop(before["contestant_id"], None)
        rows.append(_compared(before["contestant"], before, after, test.is_finished)
                    | {"unconfirmed_runs": held.get(before["contestant_id"], [])})
    for after in final.values():
        rows.append(_compared(after["contestant"], None, after, True)
                    | {"unconfirmed_runs": held.get(after["contestant_id"], [])})
    return rows


def _unconfirmed_final_runs(test):
    """contestant id -> their final runs that passed with their time still `timing_unconfirmed`."""
    held = {}
    for run in (test.rejudge.runs.filter(status=RunStatus.DONE, verdict=Verdict.PASSED)
                .select_related("submission").order_by("pk")):
        if timing_flags.UNCONFIRMED in (run.flags or []):
            held.setdefault(run.submission.contestant_id, []).append(run)
    return held


def _compared(name, before, after, finished):
    rank_before = before["rank"] if before else None
    rank_after = after["rank"] if after else None
    return {"contestant": name, "rank_before": rank_before, "rank_after": rank_after,
            "speedup_before": before["best_speedup"] if before else None,
            "speedup_after": after["best_speedup"] if after else None,
            # positive: climbed; None until the final standings exist or when either rank is missing
            "rank_change": (rank_before - rank_after) if finished and rank_before and rank_after else None}
