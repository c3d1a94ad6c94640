"""Freezing and unfreezing a season's public scoreboard."""
from django.db import transaction
from django.utils.translation import gettext as _

from leaderboard.models import FrozenStanding, ScoreboardFreeze
from submissions.models import Standing
from submissions import board_ranks, board_versions
from submissions.services import audit

SNAPSHOT_FIELDS = ("contestant_id", "rank", "accepted_count", "base_score", "bonus", "total_score",
                   "submission_count", "first_submission_at", "best_speedup")


@transaction.atomic
def freeze_scoreboard(season, user=None, reason=""):
    """Snapshot the standings; later reviews and runs change only the organizers' live board."""
    board_versions.bump(season.pk)  # first: the season's row lock; a freeze or thaw at the same moment is seen
    if ScoreboardFreeze.objects.filter(season=season).exists():
        raise ValueError(_("the scoreboard of %(season)s is already frozen") % {"season": season.code})
    freeze = ScoreboardFreeze.objects.create(season=season, frozen_by=user)
    rows = board_ranks.in_order(Standing.objects.filter(season=season).order_by("board_key", "contestant_id"),
                                lambda row: row.season_id)
    FrozenStanding.objects.bulk_create(
        [FrozenStanding(freeze=freeze, **{field: getattr(row, field) for field in SNAPSHOT_FIELDS}) for row in rows],
        batch_size=2000)
    audit.record("scoreboard.frozen", season, actor=user, after={"frozen_at": freeze.frozen_at.isoformat()},
                 reason=reason)
    return freeze


@transaction.atomic
def unfreeze_scoreboard(season, user=None, reason=""):
    board_versions.bump(season.pk)  # first: a thaw at the same moment is seen, and audited once
    freeze = ScoreboardFreeze.objects.filter(season=season).first()
    if freeze is None:
        raise ValueError(_("the scoreboard of %(season)s is not frozen") % {"season": season.code})
    frozen_at = freeze.frozen_at.isoformat()
    freeze.delete()
    audit.record("scoreboard.unfrozen", season, actor=user, before={"frozen_at": frozen_at}, reason=reason)
