"""Read-side queries of the public pages: standings are read as materialized, never recomputed here."""
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q

from leaderboard.models import FrozenStanding, ScoreboardFreeze
from submissions.models import GpuStanding, GpuType, Contestant, Issue, Review, ReviewDecision, Run, Season, Standing, Submission, Verdict
from submissions import ranked_runs, ranking


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


def standings_query(season, search="", viewer=None):
    return board_query(season, active_freeze(season, viewer), search)


def board_query(season, freeze, search=""):
    """The rows of the live board (freeze None) or of the freeze's snapshot, in board order."""
    if freeze is not None:
        rows = FrozenStanding.objects.filter(freeze=freeze).select_related("contestant")
    else:
        rows = Standing.objects.filter(season=season).select_related("contestant")
    if search:
        rows = rows.filter(Q(contestant__display_name__icontains=search) | Q(contestant__affiliation__icontains=search))
    return rows.order_by("rank", "contestant_id")


# Below this offset one query is cheaper than two (bench/leaderboard_bench.py: on PostgreSQL the
# second query costs ~2 ms, the join of 1,000 skipped rows ~1.5 ms).
DEFERRED_JOIN_FROM_OFFSET = 1000


def rows_at(query, offset, limit):
    """`query[offset:offset + limit]` without paying for the rows skipped: their ids come from the
    board-order index alone (`standing_board_order`), then only the page's rows are read and joined.
    A plain OFFSET joins and discards every skipped row, so the last page cost 2-3x the first."""
    if offset < DEFERRED_JOIN_FROM_OFFSET:
        return list(query[offset:offset + limit])
    ids = list(query.values_list("pk", flat=True)[offset:offset + limit])
    found = query.model._default_manager.filter(pk__in=ids).select_related("contestant").in_bulk()
    return [found[pk] for pk in ids if pk in found]


class BoardPaginator(Paginator):
    """Django's Paginator over a board query (standings, GPU or frozen standings in board order),
    reading each page through `rows_at`."""

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        return self._get_page(rows_at(self.object_list, bottom, top - bottom), number, self)


def season_issues(season):
    return (
        Issue.objects.filter(season=season)
        .select_related("author")
        .annotate(
            submission_count=Count("submissions", distinct=True),
            passed_runs=Count("submissions__runs", filter=Q(submissions__runs__verdict=Verdict.PASSED), distinct=True),
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


def hardware_comparison(season):
    """Each accepted sample's ranked figure per GPU type (ranked_runs): the dataset's purpose (compare
    GPUs on the same samples). `cells` holds the ranked runs (None: no figure), `columns` each GPU
    type's figure with how many runs it was taken over, or the latest run where there is none (its
    verdict explains the gap)."""
    accepted = accepted_submission_ids(season)
    gpu_types = list(season.gpu_types.order_by("slug"))
    submissions = (
        Submission.objects.filter(pk__in=accepted).select_related("issue", "contestant")
        .prefetch_related(Prefetch("runs", queryset=Run.objects.defer("result"))).order_by("issue__code", "pk")
    )
    rows = []
    for submission in submissions:
        runs = list(submission.runs.all())
        ranked = ranked_runs.by_gpu_type(runs)
        columns = []
        for gpu_type in gpu_types:
            figure = ranked.get(gpu_type.pk)
            here = [r for r in runs if r.gpu_type_id == gpu_type.pk]
            latest = max(here, key=lambda r: (r.created_at, r.pk)) if here else None
            columns.append({"run": figure.run if figure else None, "runs_counted": figure.runs_counted if figure else 0,
                            "latest": latest})
        rows.append({"submission": submission, "cells": [c["run"] for c in columns], "columns": columns,
                     "accepted_at": accepted[submission.pk].created_at})
    return gpu_types, rows


def passed_speedups(season):
    """(GPU type slug, ranked speedup) of every submission that ranks on a GPU type: one figure per
    submission and GPU type, however often it was judged."""
    slugs = dict(GpuType.objects.values_list("pk", "slug"))
    runs = Run.objects.filter(submission__issue__season=season).only(*ranked_runs.FIELDS)
    return [(slugs[gpu_type_id], f.speedup)
            for (_, gpu_type_id), f in sorted(ranked_runs.figures(runs).items())]


def contestant_profile(contestant):
    standings = list(Standing.objects.filter(contestant=contestant).select_related("season").order_by("-season__starts_at"))
    submissions = list(
        Submission.objects.filter(contestant=contestant).select_related("issue__season")
        .prefetch_related("runs__gpu_type", "reviews").order_by("-created_at")[:100]
    )
    return {"contestant": contestant, "standings": standings, "submissions": submissions,
            "issues": Issue.objects.filter(author=contestant).select_related("season")}


def public_contestant(contestant_id):
    return Contestant.objects.filter(pk=contestant_id).first()


def gpu_standings_query(season, gpu_type, search=""):
    rows = GpuStanding.objects.filter(season=season, gpu_type=gpu_type, passed_count__gt=0).select_related("contestant")
    if search:
        rows = rows.filter(Q(contestant__display_name__icontains=search) | Q(contestant__affiliation__icontains=search))
    return rows.order_by("rank", "contestant_id")


def season_gpu_type(season, slug):
    return GpuType.objects.filter(seasons=season, slug=slug).first()


def public_issue(code):
    return Issue.objects.select_related("season", "author").filter(code=code.strip().upper()).first()


def judged_runs(submission):
    """The submission's runs that have a result, for its charts."""
    runs = submission.runs.select_related("gpu_type").filter(result__isnull=False)
    return [run for run in runs if run.result]
