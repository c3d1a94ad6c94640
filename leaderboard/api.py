"""The public API (/api/v1/): leaderboards, seasons' issues and hardware, contestants; mounted by
config/api.py with the domain routers."""
from typing import List, Literal, Optional

from django.http import HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import Query, Router, Schema
from ninja.errors import HttpError
from ninja.renderers import JSONRenderer
from pydantic import Field, RootModel

from leaderboard import board_cache, board_reads, gpu_comparison, season_reads, selectors
from submissions.api.answers import answers
from submissions.api.contestant import IssueOut
from submissions.api.fields import LIMIT, OFFSET
from submissions import freeze_reads
from submissions import selectors as submission_selectors
from submissions import season_clock
from submissions.models import Season
from submissions.rules import ranked_runs, timing_flags

JSON = JSONRenderer()  # the API root's renderer (config/api.py leaves ninja's default)


public_router = Router(tags=["public"])


class StandingOut(Schema):
    rank: Optional[int]
    contestant: str
    affiliation: str
    accepted_count: int
    base_score: float
    bonus: float
    total_score: float
    submission_count: int
    best_speedup: Optional[float]


class LeaderboardOut(Schema):
    season: str
    ranking_rule: str
    ranking_settings: dict
    frozen_at: Optional[str]
    standings_status: Literal["live", "provisional", "final"] = Field(
        description="live: the season runs; provisional: it has ended and its final system test has not finished; "
                    "final: the standings come from the final system test's runs")
    total: int
    offset: int
    rows: List[StandingOut]


@public_router.get("/seasons/{code}/leaderboard", response=answers({200: LeaderboardOut}, 404, 422),
                   url_name="season_leaderboard")
def season_leaderboard(request, code: str, offset: int = OFFSET, limit: int = LIMIT):
    season = season_reads.season_with_freeze(code)
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    freeze = selectors.active_freeze(season, request.user)
    board = board_cache.board_of(freeze)
    status = season.standings_status  # the season's end changes it with no new board version

    def page():
        query = selectors.board_query(season, freeze)
        return LeaderboardOut(
            season=season.code, ranking_rule=season.ranking_rule, ranking_settings=selectors.rule_of(season).settings,
            frozen_at=freeze.frozen_at.isoformat() if freeze else None, standings_status=status, offset=offset,
            # read as the board's pages read them: a burst's page of the same rows reads them once
            total=board_cache.cached(season, (board, "", "count"), query.count, narrow=True),
            rows=[StandingOut(rank=s.rank, contestant=s.contestant.display_name, affiliation=s.contestant.affiliation,
                              accepted_count=s.accepted_count, base_score=s.base_score, bonus=s.bonus,
                              total_score=s.total_score, submission_count=s.submission_count,
                              best_speedup=s.best_speedup)
                  for s in board_reads.shown_rows(board, board_cache.per_version(
                      season, (board, "rows", offset, limit),
                      lambda: selectors.rows_at(query, offset, limit, whole_board=True)))])

    return cached_json(request, season, (board, "json", offset, limit, status), page, narrow=True)


def cached_json(request, season, parts, make, *, narrow=False):
    """The answer `make()` gives (a response schema's instance), its JSON bytes kept in the board cache
    (`narrow`: as board_cache.cached)."""
    content = board_cache.cached(season, parts, lambda: JSON.render(request, make().model_dump(), response_status=200),
                                 narrow=narrow)
    return HttpResponse(content, content_type=f"{JSON.media_type}; charset={JSON.charset}")


class ContestantOut(Schema):
    id: int
    display_name: str
    affiliation: str
    frozen: List[dict] = Field(description="The seasons shown whose scoreboard is frozen, each with its frozen_at "
                                           "and view: frozen (its standing, runs and acceptances as they were "
                                           "then), own (the contestant's own runs and results up to date, "
                                           "their standing frozen) or live (organizers)")
    standings: List[dict]
    issues: List[dict]
    submissions: List[dict]


def _runs_summary(submission, hidden=frozenset()):
    """Every run (history), each saying whether it is the one that ranks on its GPU type (ranked_runs). A
    provisional run's figure (awaiting a second judging: timing_flags) is withheld: its owner reads it
    through the contestant API. A run in `hidden` (freeze_reads.as_shown: it finished after its season's
    scoreboard froze) shows no result until the thaw."""
    runs = list(submission.runs.all())
    ranked = {f.run.pk for f in ranked_runs.by_gpu_type([r for r in runs if r.pk not in hidden]).values()}
    rows = []
    for r in runs:
        if r.pk in hidden:
            rows.append({"id": r.pk, "gpu_type": r.gpu_type.slug, "status": r.status, "verdict": "", "speedup": None,
                         "candidate_median_ms": None, "flags": [], "ranked": False, "provisional": False,
                         "hidden_until_thaw": True})
            continue
        withheld = timing_flags.is_provisional(r)
        rows.append({"id": r.pk, "gpu_type": r.gpu_type.slug, "status": r.status, "verdict": r.verdict,
                     "speedup": None if withheld else r.speedup,
                     "candidate_median_ms": None if withheld else r.candidate_median_ms, "flags": r.flags,
                     "ranked": r.pk in ranked, "provisional": withheld, "hidden_until_thaw": False})
    return rows


@public_router.get("/contestants/{contestant_id}", response=answers({200: ContestantOut}, 404, 422),
                   url_name="contestant_detail")
def contestant_detail(request, contestant_id: int):
    contestant = selectors.public_contestant(contestant_id)
    if contestant is None:
        raise HttpError(404, _("contestant %(id)s does not exist") % {"id": contestant_id})
    profile = selectors.contestant_profile(contestant, request.user)
    return {
        "id": contestant.pk, "display_name": contestant.display_name, "affiliation": contestant.affiliation,
        "frozen": [{"season": f["season"].code, "frozen_at": f["freeze"].frozen_at.isoformat(), "view": f["view"]}
                   for f in profile["freezes"]],
        "standings": [{"season": s.season.code, "rank": s.rank, "accepted_count": s.accepted_count,
                       "base_score": s.base_score, "bonus": s.bonus, "best_speedup": s.best_speedup}
                      for s in profile["standings"]],
        "issues": [{"code": i.code, "season": i.season.code, "title": i.title} for i in profile["issues"]],
        "submissions": [{"id": sub.pk, "issue": sub.issue.code, "created_at": sub.created_at.isoformat(),
                         "ranked": ranked_runs.summary(sub.runs.all()), "runs": _runs_summary(sub)} for sub in profile["submissions"]],
    }


class IssuePageOut(IssueOut):
    author: str
    created_at: str
    submissions: List[dict]


@public_router.get("/issues/{code}", response=answers({200: IssuePageOut}, 404), url_name="issue_page")
def issue_page(request, code: str):
    """The issue page's twin: its versions and how each was judged (code stays on the site's own rules).
    In a season whose scoreboard is frozen, a run finished since the freeze shows no result to anyone
    but its owner and organizers (`hidden_until_thaw`)."""
    issue = selectors.public_issue(code)
    if issue is None:
        raise HttpError(404, _("issue %(issue)s does not exist") % {"issue": code})
    held = freeze_reads.Viewer(request.user)
    return {
        "code": issue.code, "season": issue.season.code, "title": issue.title, "operator": issue.operator,
        "framework": issue.framework, "level": issue.level, "author": issue.author.display_name,
        "created_at": issue.created_at.isoformat(),
        "submissions": [_issue_submission(sub, held) for sub in submission_selectors.visible_to(
            issue.submissions.all(), request.user).select_related("issue__season", "contestant")
            .order_by("created_at", "pk").prefetch_related("runs__gpu_type")],
    }


def _issue_submission(submission, held):
    """A version of the issue as `held` (a freeze_reads.Viewer) is shown it: in a season frozen for
    them, its runs finished since the freeze hidden and its ranked figures made of the others."""
    runs = list(submission.runs.all())
    hidden = freeze_reads.as_shown(runs, held.submission_held_since(submission))
    return {"id": submission.pk, "created_at": submission.created_at.isoformat(),
            "ranked": ranked_runs.summary([run for run in runs if run.pk not in hidden]),
            "runs": _runs_summary(submission, hidden)}


class GpuTypeOut(Schema):
    slug: str
    name: str


class SeasonOut(Schema):
    code: str
    name: str
    starts_at: str = Field(description="When it starts (ISO 8601, with its UTC offset)")
    ends_at: Optional[str] = Field(description="When it ends (ISO 8601, with its UTC offset); null: no end set")
    open: bool = Field(description="Whether it accepts submissions now (the organizers' switch, apart from the dates)")
    ended: bool = Field(description="Whether its end has passed")
    phase: Literal[season_clock.PHASES] = Field(
        description="upcoming (before its start), running (until its end, or with no end set), ended")
    seconds_to_start: Optional[int] = Field(description="Whole seconds until its start; null once it has started")
    seconds_left: Optional[int] = Field(description="Whole seconds until its end; null with no end set, or once "
                                                    "it has ended")
    gpu_types: List[GpuTypeOut] = Field(description="The GPU types judging its runs (a leaderboard each)")


@public_router.get("/seasons", response=answers({200: List[SeasonOut]}), url_name="season_list")
def season_list(request):
    """Every season, the newest first (by start), with where it stands in time at this moment."""
    now = timezone.now()
    rows = []
    for s in selectors.seasons_with_gpu_types():
        clock = season_clock.clock_of(s, now)
        rows.append(SeasonOut(code=s.code, name=s.name, starts_at=s.starts_at.isoformat(),
                              ends_at=s.ends_at.isoformat() if s.ends_at else None, open=s.is_open,
                              ended=clock.phase == season_clock.ENDED, phase=clock.phase,
                              seconds_to_start=clock.seconds_to_start, seconds_left=clock.seconds_left,
                              gpu_types=[GpuTypeOut(slug=g.slug, name=g.name) for g in s.gpu_types.all()]))
    return rows


class SeasonIssueOut(IssueOut):
    author: str
    created_at: str
    submission_count: int


class SeasonIssueListOut(Schema):
    season: str
    total: int
    offset: int
    rows: List[SeasonIssueOut]


@public_router.get("/seasons/{code}/issues", response=answers({200: SeasonIssueListOut}, 404, 422),
                   url_name="season_issues")
def season_issues(request, code: str, offset: int = OFFSET, limit: int = LIMIT):
    """The season's issues, oldest first, as its page lists them."""
    season = Season.objects.filter(code=code).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    issues = selectors.season_issues(season)
    return SeasonIssueListOut(season=season.code, total=issues.count(), offset=offset, rows=[
        SeasonIssueOut(code=i.code, season=season.code, title=i.title, operator=i.operator, framework=i.framework,
                       level=i.level, author=i.author.display_name, created_at=i.created_at.isoformat(),
                       submission_count=i.submission_count)
        for i in issues[offset:offset + limit]])


FROZEN_AT = Field(description="When the season's scoreboard froze, where this answer shows it as it was "
                              "then (ISO 8601); null: live")


class HardwareOut(Schema):
    season: str
    frozen_at: Optional[str] = FROZEN_AT
    gpu_types: List[str]
    rows: List[dict]


@public_router.get("/seasons/{code}/hardware", response=answers({200: HardwareOut}, 404), url_name="season_hardware")
def season_hardware(request, code: str):
    season = selectors.with_freeze(Season.objects.filter(code=code)).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    freeze = selectors.figures_freeze(season, request.user)
    gpu_types, rows = selectors.hardware_comparison(season, freeze)
    return {
        "season": season.code, "frozen_at": _frozen_at(freeze), "gpu_types": [g.slug for g in gpu_types],
        "rows": [{"submission": row["submission"].pk, "issue": row["submission"].issue.code,
                  "title": row["submission"].issue.title, "contestant": row["submission"].contestant.display_name,
                  "cells": {g.slug: ({"candidate_median_ms": c["run"].candidate_median_ms, "speedup": c["run"].speedup,
                                      "run": c["run"].pk, "runs_counted": c["runs_counted"]} if c["run"] else None)
                            for g, c in zip(gpu_types, row["columns"])}}
                 for row in rows],
    }


class ComparedGpuOut(Schema):
    key: str
    name: str = Field(description="As the page shows it: an upload's names the GPU and who measured it")
    source: str = Field(description="judged: a GPU type's ranked runs; benchmark: one uploader's uploaded run")
    benchmark_run: Optional[int]
    samples: int
    score: Optional[float]
    relative_time_score: Optional[float]
    roofline: Optional[dict]
    gpu_name: str = Field(description="The GPU type's name, or the GPU as the uploading agent named it")
    uploaded_by: Optional[str] = Field(description="benchmark: the uploader's display name (null: the account "
                                                   "is gone, or a judged GPU type)")
    uploaded_by_organizer: bool
    uploaded_at: Optional[str]
    dataset_name: Optional[str]
    dataset_version: Optional[int]


def _frozen_at(freeze):
    return freeze.frozen_at.isoformat() if freeze is not None else None


class HardwareComparisonOut(Schema):
    season: str
    frozen_at: Optional[str] = FROZEN_AT
    a: Optional[str]
    b: Optional[str]
    gpus: List[ComparedGpuOut]
    rows: List[dict]
    ratio_geomean: Optional[float]
    missing: List[str]


@public_router.get("/seasons/{code}/hardware/comparison", response=answers({200: HardwareComparisonOut}, 404, 422),
                   url_name="season_hardware_comparison")
def season_hardware_comparison(request, code: str, a: str = Query("", description="A GPU's key (a GPU type's slug "
                               "or an uploaded series' key, upload:<uploader>:<GPU name>); left out: the GPU "
                               "with the most timed samples"),
                               b: str = Query("", description="The GPU compared with a; each row's ratio is b / a")):
    """The hardware page's comparison of two GPUs (its JSON twin): per sample, b's candidate time over a's,
    each GPU's weighted score and roofline position."""
    season = selectors.with_freeze(Season.objects.filter(code=code)).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    freeze = selectors.figures_freeze(season, request.user)
    comparison = gpu_comparison.gpu_comparison(season, a, b, site_url=request.build_absolute_uri("/").rstrip("/"),
                                          freeze=freeze)
    if comparison["error"]:
        raise HttpError(422, comparison["error"])
    missing = comparison["missing"]
    if comparison["bench_command"]:
        missing = [gpu_comparison.no_benchmark_run_line(comparison["bench_command"]), *missing]
    return {
        "season": season.code, "frozen_at": _frozen_at(freeze), "a": comparison["a"].key if comparison["a"] else None,
        "b": comparison["b"].key if comparison["b"] else None,
        "gpus": [{"key": g.key, "name": g.name, "source": g.source, "benchmark_run": g.benchmark_run,
                  "samples": g.sample_count, "score": g.score, "relative_time_score": g.relative_time_score,
                  "roofline": g.roofline, "gpu_name": g.gpu_name, "uploaded_by": g.uploaded_by,
                  "uploaded_by_organizer": g.uploaded_by_organizer,
                  "uploaded_at": g.uploaded_at.isoformat() if g.uploaded_at else None,
                  "dataset_name": g.dataset_name, "dataset_version": g.dataset_version} for g in comparison["gpus"]],
        "rows": comparison["rows"], "ratio_geomean": comparison["ratio_geomean"], "missing": missing,
    }


class GpuStandingOut(Schema):
    rank: Optional[int]
    contestant: str
    passed_count: int
    geomean_speedup: Optional[float]
    best_speedup: Optional[float]


GpuBoardOut = RootModel[List[GpuStandingOut]]
FROZEN_AT_HEADER = "X-Scoreboard-Frozen-At"


@public_router.get("/seasons/{code}/gpus/{slug}/leaderboard", response=answers({200: List[GpuStandingOut]}, 404, 422),
                   url_name="gpu_leaderboard")
def gpu_leaderboard(request, code: str, slug: str, offset: int = OFFSET, limit: int = LIMIT):
    """The GPU type's board; during a freeze the public's is as it was then, and the answer's
    X-Scoreboard-Frozen-At header says since when (ISO 8601)."""
    season = season_reads.season_with_freeze(code)
    gpu_type = selectors.season_gpu_type(season, slug) if season else None
    if gpu_type is None:
        raise HttpError(404, _("season %(season)s is not judged on GPU type %(gpu)s") % {"season": code, "gpu": slug})
    freeze = selectors.figures_freeze(season, request.user)
    board = board_cache.gpu_board_of(freeze, gpu_type.pk)
    answer = cached_json(request, season, (board, "json", offset, limit), lambda: GpuBoardOut(
        [GpuStandingOut(rank=r.rank, contestant=r.contestant.display_name, passed_count=r.passed_count,
                        geomean_speedup=r.geomean_speedup, best_speedup=r.best_speedup)
         for r in board_reads.shown_rows(board, selectors.rows_at(
             selectors.gpu_standings_query(season, gpu_type, freeze=freeze), offset, limit, whole_board=True))]),
        narrow=True)
    if freeze is not None:  # the answer is a list (its clients read it so): the notice rides in a header
        answer[FROZEN_AT_HEADER] = freeze.frozen_at.isoformat()
    return answer
