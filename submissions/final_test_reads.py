"""Which runs rank a season's standings around its final system test (services/final_system_tests.py).

Before the test finishes, its runs rank nothing: the board stays the provisional one while they
arrive. Once it has finished, its runs alone rank: a counted submission whose final runs did not all
pass (or that the test did not judge) counts no more."""
from submissions.models import FinalSystemTest, Run, Verdict


def ranking_runs(season, submission_ids):
    """(the runs whose figures rank, the submission ids that still count) for these counted submissions."""
    submission_ids = set(submission_ids)
    runs = Run.objects.filter(submission_id__in=submission_ids)
    test = FinalSystemTest.objects.filter(season_id=season.pk).only("rejudge_id", "finished_at").first()
    if test is None:
        return runs, submission_ids
    if test.finished_at is None:
        return runs.exclude(rejudge_id=test.rejudge_id), submission_ids
    final = runs.filter(rejudge_id=test.rejudge_id)
    judged = set(final.values_list("submission_id", flat=True))
    failed = set(final.exclude(verdict=Verdict.PASSED).values_list("submission_id", flat=True))
    kept = judged - failed
    return final.filter(submission_id__in=kept), kept
