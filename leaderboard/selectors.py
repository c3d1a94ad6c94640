"""Read-side queries of the public pages: standings are read as materialized, never recomputed here."""
import bisect

from django.core.paginator import Paginator
from django.db.models import Count, F, FilteredRelation, Prefetch, Q, prefetch_related_objects

from leaderboard.models import FrozenAcceptance, FrozenGpuStanding, FrozenRun, FrozenStanding, ScoreboardFreeze
from submissions import board_ranks, freeze_reads, season_access_reads
from submissions import selectors as submission_selectors
from submissions.models import GpuStanding, GpuType, Contestant, Issue, Review, ReviewDecision, Run, Season, SeasonBan, Standing, Submission, Verdict
from submissions.models import SubmissionMode
from submissions.rules import ranked_runs, ranking, timing_flags


def with_freeze(seasons):
    """Seasons read with their freeze (or none) in the same query: a board page then asks no more."""
    return seasons.select_related("scoreboard_freeze")


def active_freeze(season, viewer=None):
    """The freeze a viewer is held to: the public sees the frozen board, organizers the live one."""
    if viewer is not None and viewer.is_staff:
        return None
    if Season.scoreboard_freeze.is_cached(season):  # read by with_freeze
        return getattr(season, "scoreboard_freeze", None)
    return ScoreboardFreeze.objects.filter(season=season).first()


def figures_freeze(season, viewer=None):
    """The freeze of everything else the public sees of the season's results `viewer` is held to
    (active_freeze): its GPU boards, the hardware comparison, the charts, contestants' runs and
    acceptances. None: live (organizers, or a freeze taken before those were snapshotted)."""
    freeze = active_freeze(season, viewer)
    return freeze if freeze is not None and freeze.freezes_everything else None


def standings_query(season, search="", viewer=None):
    return board_query(season, active_freeze(season, viewer), search)


def board_query(season, freeze, search=""):
    """The rows of the live board (freeze None) or of the freeze's snapshot, in board order."""
    if freeze is not None:  # a snapshot keeps the ranks it was taken with, less the banned (rows_at)
        rows = (FrozenStanding.objects.filter(freeze=freeze)
                .exclude(contestant_id__in=season_access_reads.banned_contestant_ids(freeze.season_id))
                .select_related("contestant").order_by("rank", "contestant_id"))
    else:
        rows = Standing.objects.filter(season=season).select_related("contestant").order_by("board_key", "contestant_id")
    if search:
        rows = rows.filter(Q(contestant__display_name__icontains=search) | Q(contestant__affiliation__icontains=search))
    return rows


# Below this offset one query is cheaper than two (bench/site/leaderboard.py: on PostgreSQL the
# second query costs ~2 ms, the join of 1,000 skipped rows ~1.5 ms).
DEFERRED_JOIN_FROM_OFFSET = 1000


def rows_at(query, offset, limit, *, whole_board=False):
    """`query[offset:offset + limit]`, ranked, without paying for the rows skipped: their ids come from
    the board-order index alone (`standing_board_order`), then only the page's rows are read and joined.
    A plain OFFSET joins and discards every skipped row, so the last page cost 2-3x the first.
    `whole_board`: `query` is a whole live board in order (no search): the row before the page is read
    with it, and its key places the page with no count (board_ranks.attach_in_order)."""
    live = issubclass(query.model, board_ranks.RankedRow)  # else a snapshot's rows, ranked as taken
    with_before = whole_board and live and offset > 0  # the row before the page, read with it
    start, key_before, complete = offset - with_before, None, True
    if offset < DEFERRED_JOIN_FROM_OFFSET:
        rows = list(query[start:offset + limit])
        if with_before and rows:
            key_before = board_ranks.key_of(rows.pop(0))
    else:
        if live:
            pairs = list(query.values_list("pk", "board_key")[start:offset + limit])
            if with_before and pairs:
                key_before = bytes(pairs.pop(0)[1])
            ids = [pk for pk, _ in pairs]
        else:
            ids = list(query.values_list("pk", flat=True)[offset:offset + limit])
        found = query.model._default_manager.filter(pk__in=ids).order_by().in_bulk()
        rows = with_contestants([found[pk] for pk in ids if pk in found])
        complete = len(rows) == len(ids)  # none removed between the two reads: the rows stay consecutive
    if rows and live:  # live rows: ranked from their keys, all at once
        if whole_board and complete:
            board_ranks.attach_in_order(rows[0].board(), rows, offset, key_before)
        else:
            board_ranks.attach(rows[0].board(), rows)
    elif rows:
        ranked_without_banned(rows)
    return rows


def ranked_without_banned(frozen_rows):
    """Frozen rows (of one snapshot board or several: the season's, a GPU type's) ranked as if the
    contestants banned since the freeze had not been on it: a rank less for each banned row ranked
    above. A live board holds no row of theirs (services/standings.remove); a snapshot is kept whole,
    so a lifted ban shows the row again."""
    boards = {}
    for row in frozen_rows:
        boards.setdefault((type(row), row.freeze_id, getattr(row, "gpu_type_id", None)), []).append(row)
    for (_, freeze_id, _), rows in boards.items():
        hidden = sorted(rank for rank in rows[0].board().filter(contestant_id__in=SeasonBan.objects.filter(
            season__scoreboard_freeze=freeze_id, lifted_at__isnull=True).values("contestant_id"))
            .values_list("rank", flat=True) if rank is not None)
        if hidden:
            for row in rows:
                if row.rank is not None:
                    row.rank -= bisect.bisect_left(hidden, row.rank)
    return frozen_rows


def with_contestants(rows):
    """`rows` (standings, live or frozen) with their contestants read by key in one query, not joined:
    PostgreSQL joins 50 rows to a scan of every contestant, and prefetch_related builds its lookup of
    one key per row in Python (a third of a deep page's reading)."""
    contestants = Contestant.objects.in_bulk({row.contestant_id for row in rows})
    for row in rows:
        row.contestant = contestants[row.contestant_id]
    return rows


class BoardPaginator(Paginator):
    """Django's Paginator over a board query (standings, GPU or frozen standings in board order),
    reading each page through `rows_at`."""

    whole_board = False  # the query is a whole board, not a search's matches (rows_at)
    read_rows = staticmethod(rows_at)  # how the page's rows are read (views keep a whole board's per version)

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        return self._get_page(self.read_rows(self.object_list, bottom, top - bottom, whole_board=self.whole_board),
                              number, self)


def seasons_with_gpu_types():
    """Every season with the GPU types judging it, the newest first (by start)."""
    return Season.objects.prefetch_related(Prefetch("gpu_types", queryset=GpuType.objects.order_by("slug"))).order_by(
        "-starts_at", "-pk")


def season_issues(season):
    return (
        Issue.objects.filter(season=season)
        .select_related("author")
        .annotate(
            # ranked submissions only: test and benchmark ones are their owner's
            submission_count=Count("submissions", filter=Q(submissions__mode=SubmissionMode.RANKED), distinct=True),
            passed_runs=Count("submissions__runs", filter=Q(submissions__runs__verdict=Verdict.PASSED,
                                                            submissions__mode=SubmissionMode.RANKED), distinct=True),
        )
        .order_by("created_at")
    )


def rule_of(season):
    return ranking.rule_of(season)


def accepted_submission_ids(season):
    """Submissions whose latest review accepts them."""
    latest = {}
    for review in Review.objects.filter(submission__issue__season=season).order_by("created_at", "pk"):
        latest[review.submission_id] = review
    return {sid: r for sid, r in latest.items() if r.decision == ReviewDecision.ACCEPTED}


def runs_at_freeze(freeze, runs):
    """`runs` (a query of runs) as they stood at `freeze` (FrozenRun): the runs made by then, each read
    with the status, verdict, flags and figures it had. Pass what it returns through `as_at_freeze`."""
    return runs.annotate(at_freeze=FilteredRelation("frozen_states", condition=Q(frozen_states__freeze=freeze))).filter(
        at_freeze__isnull=False).annotate(**{f"at_freeze_{name}": F(f"at_freeze__{name}") for name in FrozenRun.SHOWN})


def as_at_freeze(runs):
    """Runs read through `runs_at_freeze`, showing what they showed at the freeze (never saved)."""
    for run in runs:
        for name in FrozenRun.SHOWN:
            setattr(run, name, getattr(run, f"at_freeze_{name}"))
    return runs


def hardware_comparison(season, freeze=None):
    """Each accepted sample's ranked figure per GPU type (ranked_runs): the dataset's purpose (compare
    GPUs on the same samples). `cells` holds the ranked runs (None: no figure), `columns` each GPU
    type's figure with how many runs it was taken over, or the latest run where there is none (its
    verdict explains the gap). `freeze` (figures_freeze): as it was then, from the freeze's snapshot."""
    runs_read = Run.objects.defer("result")
    if freeze is None:
        accepted = {pk: review.created_at for pk, review in accepted_submission_ids(season).items()}
    else:
        accepted = dict(FrozenAcceptance.objects.filter(freeze=freeze).values_list("submission_id", "accepted_at"))
        runs_read = runs_at_freeze(freeze, runs_read)
    gpu_types = list(season.gpu_types.order_by("slug"))
    submissions = (
        Submission.objects.filter(pk__in=accepted).select_related("issue", "contestant")
        .prefetch_related(Prefetch("runs", queryset=runs_read)).order_by("issue__code", "pk")
    )
    rows = []
    for submission in submissions:
        runs = list(submission.runs.all())
        if freeze is not None:
            as_at_freeze(runs)
        ranked = ranked_runs.by_gpu_type(runs)
        columns = []
        for gpu_type in gpu_types:
            figure = ranked.get(gpu_type.pk)
            here = [r for r in runs if r.gpu_type_id == gpu_type.pk]
            latest = max(here, key=lambda r: (r.created_at, r.pk)) if here else None
            columns.append({"run": figure.run if figure else None, "runs_counted": figure.runs_counted if figure else 0,
                            "latest": latest})
        rows.append({"submission": submission, "cells": [c["run"] for c in columns], "columns": columns,
                     "accepted_at": accepted[submission.pk]})
    return gpu_types, rows


def passed_speedups(season, freeze=None):
    """(GPU type slug, ranked speedup) of every submission that ranks on a GPU type: one figure per
    submission and GPU type, however often it was judged (`freeze`: as it was then)."""
    slugs = dict(GpuType.objects.values_list("pk", "slug"))
    runs = Run.objects.filter(submission__issue__season=season, submission__mode=SubmissionMode.RANKED).only(*ranked_runs.FIELDS)
    if freeze is not None:
        runs = as_at_freeze(list(runs_at_freeze(freeze, runs)))
    return [(slugs[gpu_type_id], f.speedup)
            for (_, gpu_type_id), f in sorted(ranked_runs.figures(runs).items())]


def contestant_standings(contestant, viewer):
    """The contestant's row on each season's board that `viewer` is held to (active_freeze): during a
    freeze the snapshot's row, or none when the contestant was not on the board then, so their page
    never tells the public what the frozen board hides. Frozen rows carry `season` like live ones."""
    live = list(Standing.objects.filter(contestant=contestant).select_related("season__scoreboard_freeze")
                .order_by("-season__starts_at"))
    freezes = {standing.season_id: active_freeze(standing.season, viewer) for standing in live}
    frozen = {row.freeze_id: row for row in FrozenStanding.objects.filter(
        contestant=contestant, freeze__in=[freeze for freeze in freezes.values() if freeze is not None])}
    rows = []
    for standing in live:
        freeze = freezes[standing.season_id]
        if freeze is None:
            rows.append(standing)
        elif freeze.pk in frozen:
            frozen[freeze.pk].season = standing.season
            rows.append(frozen[freeze.pk])
    ranked_without_banned([row for row in rows if isinstance(row, FrozenStanding)])
    return rows


def contestant_profile(contestant, viewer):
    """The contestant's standings (as `viewer`'s boards show them), issues and latest submissions, each
    with its `state` for `viewer`. In a season whose results are frozen for `viewer` (figures_freeze)
    a submission shows its runs and acceptance as they were at the freeze, but to the contestant
    themselves: their own runs and results are theirs to follow. `freezes`: the seasons shown that
    are frozen, each with how `viewer` sees them (freeze_views)."""
    standings = contestant_standings(contestant, viewer)
    submissions = list(submission_selectors.visible_to(Submission.objects.filter(contestant=contestant), viewer)
                       .select_related("issue__season__scoreboard_freeze", "contestant").order_by("-created_at")[:100])
    own = _is_self(contestant, viewer)
    held = {}  # freeze (None: live) -> the submissions shown as they were at it
    for submission in submissions:
        held.setdefault(None if own else figures_freeze(submission.issue.season, viewer), []).append(submission)
    runs = Run.objects.select_related("gpu_type")
    prefetch_related_objects(held.pop(None, []), Prefetch("runs", queryset=runs), "reviews")
    for freeze, group in held.items():
        prefetch_related_objects(group, Prefetch("runs", queryset=runs_at_freeze(freeze, runs)), "reviews")
    submission_selectors.with_states(submissions, viewer)
    for freeze, group in held.items():
        accepted = set(FrozenAcceptance.objects.filter(freeze=freeze, submission__in=group)
                       .values_list("submission_id", flat=True))
        for submission in group:
            as_at_freeze(submission.runs.all())
            # the public sees no other state (visible_state), nor an acceptance made since
            submission.state = submission_selectors.SubmissionState.ACCEPTED if submission.pk in accepted else None
    seasons = {row.season for row in standings} | {submission.issue.season for submission in submissions}
    return {"contestant": contestant, "standings": standings, "submissions": submissions,
            "freezes": freeze_views(seasons, contestant, viewer),
            "issues": Issue.objects.filter(author=contestant).select_related("season")}


def _is_self(contestant, viewer):
    return viewer is not None and viewer.is_authenticated and contestant.user_id == viewer.pk


FROZEN, OWN, LIVE = "frozen", "own", "live"  # how a viewer sees a frozen season's parts of a contestant's page


def freeze_views(seasons, contestant, viewer):
    """[{"season", "freeze", "view"}] of the frozen ones of `seasons` (by code): `view` is FROZEN (the
    public: as at the freeze), OWN (the contestant: their standing frozen, their runs and results up to
    date) or LIVE (organizers)."""
    views = []
    for season in sorted(seasons, key=lambda season: season.code):
        freeze = active_freeze(season)
        if freeze is not None:
            view = LIVE if viewer is not None and viewer.is_staff else OWN if _is_self(contestant, viewer) else FROZEN
            views.append({"season": season, "freeze": freeze, "view": view})
    return views


def public_contestant(contestant_id):
    return Contestant.objects.filter(pk=contestant_id).first()


def gpu_standings_query(season, gpu_type, search="", freeze=None):
    """The rows of a GPU type's live board that passed there (freeze None), or of the freeze's snapshot
    of it (figures_freeze) less the banned, in board order."""
    if freeze is not None:
        rows = (FrozenGpuStanding.objects.filter(freeze=freeze, gpu_type=gpu_type)
                .exclude(contestant_id__in=season_access_reads.banned_contestant_ids(freeze.season_id))
                .select_related("contestant").order_by("rank", "contestant_id"))
    else:
        rows = (GpuStanding.objects.filter(season=season, gpu_type=gpu_type, passed_count__gt=0)
                .select_related("contestant").order_by("board_key", "contestant_id"))
    if search:
        rows = rows.filter(Q(contestant__display_name__icontains=search) | Q(contestant__affiliation__icontains=search))
    return rows


def season_gpu_type(season, slug):
    return GpuType.objects.filter(seasons=season, slug=slug).first()


def public_issue(code):
    return Issue.objects.select_related("season", "author").filter(code=code.strip().upper()).first()


def judged_runs(submission, viewer=None):
    """The submission's runs that have a result, for its charts (a public page: a provisional figure,
    awaiting a second judging, is left out; its owner sees it in the runs table). In a season whose
    results are frozen for `viewer`, none that finished since the freeze (freeze_reads)."""
    since = freeze_reads.Viewer(viewer).submission_held_since(submission)
    runs = freeze_reads.shown_runs(submission.runs.select_related("gpu_type"), since)
    return [run for run in runs if run.result and not timing_flags.is_provisional(run)]
