"""Each season's board version (`Season.board_version`): a random token replaced in the transaction of
every change to what the season's boards show (standings, ranks, GPU standings, a freeze, a
contestant's name, the season itself, its GPU types). The public pages cache their renderings under it
(leaderboard/board_cache.py): the commit that changes a board publishes the new version with it, so
no reader can pair the new version with the old rows, and a token is never drawn twice, so entries
written for another database or a rolled-back transaction never match.

Writers bump first (`refresh_for`): the season's row lock then orders writers of one season before
they touch its standings.
"""
from django.db.models.signals import m2m_changed, post_save, pre_delete

from submissions.models import Contestant, GpuStanding, GpuType, Season, Standing, new_board_version


def bump(*season_ids):
    Season.objects.filter(pk__in=season_ids).update(board_version=new_board_version())


def seasons_showing(contestant_id):
    """The seasons whose boards (live, frozen or per GPU type) can show the contestant."""
    return {*Standing.objects.filter(contestant_id=contestant_id).values_list("season_id", flat=True),
            *GpuStanding.objects.filter(contestant_id=contestant_id).values_list("season_id", flat=True)}


def _contestant_changed(sender, instance, created=False, **kwargs):
    # Their name and affiliation are on every board they are in; a new contestant is on none yet.
    if not created:
        bump(*seasons_showing(instance.pk))


def _standing_saved(sender, instance, **kwargs):
    bump(instance.season_id)


def _gpu_type_changed(sender, instance, **kwargs):
    # Its name and slug are on the boards (the per-GPU links) of the seasons judged on it.
    bump(*instance.seasons.values_list("pk", flat=True))


def _season_gpu_types_changed(sender, instance, action, reverse, pk_set, **kwargs):
    if action in ("post_add", "post_remove", "pre_clear"):
        # from the season's side `instance` is the season; from the GPU type's, `pk_set` names the
        # seasons (none when clearing: the type's seasons, read before they are cleared)
        bump(*((instance.pk,) if not reverse else pk_set or instance.seasons.values_list("pk", flat=True)))


def connect():
    """Bumps for writes made outside the standings services (the admin, a profile edit, a deleted
    account). Deletions of standings themselves go through a season or a contestant (bumped here) or
    the admin (StandingAdmin): no post_delete receiver on Standing, which would turn the cascade of a
    deleted season into one query per row."""
    post_save.connect(_contestant_changed, sender=Contestant, dispatch_uid="board_versions.contestant_saved")
    pre_delete.connect(_contestant_changed, sender=Contestant, dispatch_uid="board_versions.contestant_deleted")
    post_save.connect(_standing_saved, sender=Standing, dispatch_uid="board_versions.standing_saved")
    post_save.connect(_standing_saved, sender=GpuStanding, dispatch_uid="board_versions.gpu_standing_saved")
    post_save.connect(_gpu_type_changed, sender=GpuType, dispatch_uid="board_versions.gpu_type_saved")
    pre_delete.connect(_gpu_type_changed, sender=GpuType, dispatch_uid="board_versions.gpu_type_deleted")
    m2m_changed.connect(_season_gpu_types_changed, sender=Season.gpu_types.through,
                        dispatch_uid="board_versions.season_gpu_types")
