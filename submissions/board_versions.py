"""Each season's board version (`Season.board_version`): a random token replaced in the transaction of
every change to what the season's boards show (standings, ranks, GPU standings, a freeze, a
contestant's name, the season itself, its GPU types). The public pages cache their renderings under it
(leaderboard/board_cache.py): the commit that changes a board publishes the new version with it, so
no reader can pair the new version with the old rows, and a token is never drawn twice, so entries
written for another database or a rolled-back transaction never match.

Writers bump first (`refresh_for`): the season's row lock then orders writers of one season before
they touch its standings.

The season keeps a journal of what its latest versions changed (`Season.board_changes`, written with
the version): for each version, either anything (None) or, board by board, the spans of board keys
whose rows changed (None for a whole board). A standing stored by the standings service names the
span between its old key and its new one; every other write changes anything. A rendering of a page
whose rows lie outside every span since its version shows what the current version would show
(leaderboard/board_cache.py), so a review re-renders the pages between the contestant's old place
and new one, not every page. Each bump is an entry (a review's three: the season's lock, the
standing, its GPU standing).
"""
import json
import threading
from collections import OrderedDict

from django.db import transaction
from django.db.models.signals import m2m_changed, post_save, pre_delete

from submissions.models import Contestant, GpuStanding, GpuType, Season, Standing, new_board_version

LIVE = "live"  # the live board's name in the journal (a freeze's snapshot never changes)
KEPT_CHANGES = 32  # versions a season's journal describes


def gpu_board(gpu_type_id):
    return f"gpu-{gpu_type_id}"


def bump(*season_ids, changes=None):
    """A new board version for each season. `changes`: what it changes on the season's boards,
    {board: [[lowest key, highest key] (hex), ...] or None (the whole board)}; None: anything."""
    if changes is None:
        version = new_board_version()
        Season.objects.filter(pk__in=season_ids).update(
            board_version=version, board_changes=json.dumps([[version, None]]))
        return
    for season_id in season_ids:
        _bump_with(season_id, changes)


def _bump_with(season_id, changes):
    with transaction.atomic():
        row = Season.objects.select_for_update().filter(pk=season_id).values_list(
            "board_version", "board_changes").first()
        if row is None:
            return
        current, text = row
        entries = _parsed(text)
        version = new_board_version()
        if not entries or entries[-1][0] != current:  # the journal does not describe the current version
            entries = [[version, None]]
        else:  # (a transaction's earlier bumps leave versions no reader sees: their entries cost a slot)
            entries = [*entries[-(KEPT_CHANGES - 1):], [version, changes]]
        Season.objects.filter(pk=season_id).update(board_version=version, board_changes=json.dumps(entries))


def merged(first, second):
    """Two journal entries' changes as one."""
    if first is None or second is None:
        return None
    merged = {board: None if spans is None else list(spans) for board, spans in first.items()}
    for board, spans in second.items():
        if board in merged and merged[board] is None:
            continue
        merged[board] = None if spans is None else [*merged.get(board, []), *spans]
    return merged


def span(*keys):
    """The journal's span of board keys (bytes) `keys`: [lowest, highest], as hex (hex compares as the
    bytes do)."""
    hexed = [bytes(key).hex() for key in keys]
    return [min(hexed), max(hexed)]


def _parsed(text):
    try:
        entries = json.loads(text) if text else []
    except ValueError:
        return []
    return entries if isinstance(entries, list) else []


_journals = OrderedDict()  # (season pk, version) -> the journal read with it
_journals_lock = threading.Lock()


def journal(season):
    """[(version, changes), ...] of the season's latest versions as read with it, the oldest first;
    empty when they do not end at its current version."""
    name = (season.pk, season.board_version)
    with _journals_lock:
        if name in _journals:
            return _journals[name]
    entries = [(version, changes) for version, changes in _parsed(season.board_changes)]
    if not entries or entries[-1][0] != season.board_version:
        entries = []
    with _journals_lock:
        _journals[name] = entries
        while len(_journals) > 64:
            _journals.popitem(last=False)
    return entries


def seasons_showing(contestant_id):
    """The seasons whose boards (live, frozen or per GPU type) can show the contestant."""
    return {*Standing.objects.filter(contestant_id=contestant_id).values_list("season_id", flat=True),
            *GpuStanding.objects.filter(contestant_id=contestant_id).values_list("season_id", flat=True)}


def _contestant_changed(sender, instance, created=False, **kwargs):
    # Their name and affiliation are on every board they are in; a new contestant is on none yet.
    if not created:
        bump(*seasons_showing(instance.pk))


def _standing_saved(sender, instance, created=False, **kwargs):
    moved = getattr(instance, "board_move", None)  # (old key, new key), set by the standings service
    if sender is GpuStanding:  # its GPU type's board alone
        bump(instance.season_id, changes={gpu_board(instance.gpu_type_id): None})
    elif moved is not None and not created:  # the rows between its old place and its new one
        bump(instance.season_id, changes={LIVE: [span(*moved)]})
    else:  # a new row moves every row after it, and the count every page shows
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
