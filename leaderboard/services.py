"""Freezing and unfreezing a season's public scoreboard."""
from django.db import connection, transaction
from django.db.models import Value
from django.utils.translation import gettext as _

from leaderboard import selectors
from leaderboard.models import FrozenAcceptance, FrozenGpuStanding, FrozenRun, FrozenStanding, ScoreboardFreeze
from submissions.models import GpuStanding, Run, Standing
from submissions import board_ranks, board_versions
from submissions.services import audit, pr_comments

SNAPSHOT_FIELDS = ("contestant_id", "rank", "accepted_count", "base_score", "bonus", "total_score",
                   "submission_count", "first_submission_at", "best_speedup")
GPU_SNAPSHOT_FIELDS = ("gpu_type_id", "contestant_id", "rank", "passed_count", "geomean_speedup", "best_speedup")


@transaction.atomic
def freeze_scoreboard(season, user=None, reason=""):
    """Snapshot what the public sees of the season's results (its board, each GPU type's board, its runs
    and acceptances); later reviews and runs change only what organizers see."""
    board_versions.bump(season.pk)  # first: the season's row lock; a freeze or thaw at the same moment is seen
    if ScoreboardFreeze.objects.filter(season=season).exists():
        raise ValueError(_("the scoreboard of %(season)s is already frozen") % {"season": season.code})
    freeze = ScoreboardFreeze.objects.create(season=season, frozen_by=user)
    rows = board_ranks.in_order(Standing.objects.filter(season=season).order_by("board_key", "contestant_id"),
                                lambda row: row.season_id)
    FrozenStanding.objects.bulk_create(
        [FrozenStanding(freeze=freeze, **{field: getattr(row, field) for field in SNAPSHOT_FIELDS}) for row in rows],
        batch_size=2000)
    _snapshot_gpu_boards(freeze)
    _snapshot_runs(freeze)
    FrozenAcceptance.objects.bulk_create(
        [FrozenAcceptance(freeze=freeze, submission_id=submission_id, accepted_at=review.created_at)
         for submission_id, review in selectors.accepted_submission_ids(season).items()], batch_size=2000)
    audit.record("scoreboard.frozen", season, actor=user, after={"frozen_at": freeze.frozen_at.isoformat()},
                 reason=reason)
    return freeze


def _snapshot_gpu_boards(freeze):
    """Each GPU type's board as the public sees it: its rows that passed there, with their ranks."""
    rows = board_ranks.in_order(GpuStanding.objects.filter(season_id=freeze.season_id)
                                .order_by("gpu_type_id", "board_key", "contestant_id"), lambda row: row.gpu_type_id)
    FrozenGpuStanding.objects.bulk_create(
        [FrozenGpuStanding(freeze=freeze, **{field: getattr(row, field) for field in GPU_SNAPSHOT_FIELDS})
         for row in rows if row.passed_count > 0], batch_size=2000)


def _snapshot_runs(freeze):
    """Every run of the season as it stands, copied inside the database (INSERT ... SELECT): a season's
    runs run to hundreds of thousands, and none need pass through Python."""
    runs = (Run.objects.filter(submission__issue__season_id=freeze.season_id).order_by()
            .annotate(snapshot_of=Value(freeze.pk)).values_list("pk", *FrozenRun.SHOWN, "snapshot_of"))
    select, params = runs.query.sql_with_params()  # the fields' columns, then the annotation's
    quote, meta = connection.ops.quote_name, FrozenRun._meta
    columns = ", ".join(quote(meta.get_field(name).column) for name in ("run", *FrozenRun.SHOWN, "freeze"))
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {quote(meta.db_table)} ({columns}) {select}", params)


@transaction.atomic
def unfreeze_scoreboard(season, user=None, reason=""):
    board_versions.bump(season.pk)  # first: a thaw at the same moment is seen, and audited once
    freeze = ScoreboardFreeze.objects.filter(season=season).first()
    if freeze is None:
        raise ValueError(_("the scoreboard of %(season)s is not frozen") % {"season": season.code})
    frozen_at = freeze.frozen_at.isoformat()
    freeze.delete()
    audit.record("scoreboard.unfrozen", season, actor=user, before={"frozen_at": frozen_at}, reason=reason)
    pr_comments.post_held_verdicts(season, freeze.frozen_at)
