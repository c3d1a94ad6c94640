"""Read-side queries of the public pages: standings are read as materialized, never recomputed here."""
from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q
from django.utils.translation import gettext

from leaderboard.models import FrozenStanding, ScoreboardFreeze
from submissions import board_ranks
from submissions import selectors as submission_selectors
from submissions.models import BenchmarkRun, GpuStanding, GpuType, Contestant, Issue, Review, ReviewDecision, Run, Season, Standing, Submission, Verdict
from submissions.rules import ranked_runs, ranking, timing_flags, weights


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
    if freeze is not None:  # a snapshot keeps the ranks it was taken with
        rows = FrozenStanding.objects.filter(freeze=freeze).select_related("contestant").order_by("rank", "contestant_id")
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
    live = query.model is not FrozenStanding
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
    return rows


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
    return rows


def contestant_profile(contestant, viewer):
    """The contestant's standings (as `viewer`'s boards show them), issues and latest submissions, each
    with its `state` for `viewer`."""
    standings = contestant_standings(contestant, viewer)
    submissions = submission_selectors.with_states(list(
        Submission.objects.filter(contestant=contestant).select_related("issue__season", "contestant")
        .prefetch_related("runs__gpu_type", "reviews").order_by("-created_at")[:100]
    ), viewer)
    return {"contestant": contestant, "standings": standings, "submissions": submissions,
            "issues": Issue.objects.filter(author=contestant).select_related("season")}


def public_contestant(contestant_id):
    return Contestant.objects.filter(pk=contestant_id).first()


def gpu_standings_query(season, gpu_type, search=""):
    rows = GpuStanding.objects.filter(season=season, gpu_type=gpu_type, passed_count__gt=0).select_related("contestant")
    if search:
        rows = rows.filter(Q(contestant__display_name__icontains=search) | Q(contestant__affiliation__icontains=search))
    return rows.order_by("board_key", "contestant_id")


def season_gpu_type(season, slug):
    return GpuType.objects.filter(seasons=season, slug=slug).first()


def public_issue(code):
    return Issue.objects.select_related("season", "author").filter(code=code.strip().upper()).first()


def judged_runs(submission):
    """The submission's runs that have a result, for its charts (a public page: a provisional figure,
    awaiting a second judging, is left out; its owner sees it in the runs table)."""
    runs = submission.runs.select_related("gpu_type").filter(result__isnull=False)
    return [run for run in runs if run.result and not timing_flags.is_provisional(run)]


# ---- Comparing two GPUs on the season's samples --------------------------------------------------

@dataclass
class GpuSeries:
    """One GPU's timed samples: a GPU type's ranked runs (source "judged") or one uploader's newest
    benchmark run of this season from one GPU name (source "benchmark"). `samples` maps a sample (its
    issue code, as the dataset names it) to its candidate time and where that comes from."""
    key: str  # what ?a= and ?b= name: the GPU type's slug, or BenchmarkRun.comparison_key
    name: str  # as shown: an upload's names its uploader, so it never reads as a judged GPU type's
    source: str  # "judged" or "benchmark"
    samples: dict = field(default_factory=dict)
    score: Optional[float] = None  # weighted geometric mean of the speedups
    relative_time_score: Optional[float] = None  # benchmark runs: the site's recomputed score over the baseline
    benchmark_run: Optional[int] = None
    roofline: Optional[dict] = None  # None: no throughput figures
    # benchmark runs: the GPU as the agent named it, who uploaded it (None: the account is gone), when, of what
    gpu_name: str = ""
    uploaded_by: Optional[str] = None
    uploaded_by_organizer: bool = False
    uploaded_at: Optional[datetime] = None
    dataset_name: Optional[str] = None
    dataset_version: Optional[int] = None

    @property
    def sample_count(self):
        return len(self.samples)


class ComparisonError(ValueError):
    """?a= or ?b= names no GPU of the season, or both name the same one; the message says which."""


def _median(values):
    values = sorted(values)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _roofline(samples):
    """Median achieved TFLOP/s over the samples with a FLOP count and median GB/s over those with a
    byte count, each also as a share of the GPU's peak the agent reported with it (a memory-bound
    sample has no FLOP count and still places the GPU on the bandwidth axis). None: no throughput."""
    compute = [s for s in samples.values() if s.get("tflops")]
    memory = [s for s in samples.values() if s.get("gbps")]
    if not compute and not memory:
        return None
    return {"samples": sum(1 for s in samples.values() if s.get("tflops") or s.get("gbps")),
            "tflops": _median([s["tflops"] for s in compute]), "gbps": _median([s["gbps"] for s in memory]),
            "peak_tflops": _median([s["peak_tflops"] for s in compute if s.get("peak_tflops")]),
            "peak_gbps": _median([s["peak_gbps"] for s in memory if s.get("peak_gbps")]),
            "tflops_pct": _median([100 * s["tflops"] / s["peak_tflops"] for s in compute if s.get("peak_tflops")]),
            "gbps_pct": _median([100 * s["gbps"] / s["peak_gbps"] for s in memory if s.get("peak_gbps")])}


def _judged_series(season, hardware=None):
    """Each GPU type of the season with the ranked run of every accepted sample that has one
    (`hardware`: hardware_comparison(season), where the caller has it already)."""
    rule = weights.rule_of(season)
    gpu_types, rows = hardware or hardware_comparison(season)
    ranked = [(g, row["submission"], c["run"]) for row in rows for g, c in zip(gpu_types, row["columns"])
              if c["run"] is not None and c["run"].candidate_median_ms]
    # the agent's peaks ride in each run's result; read only for the ranked runs
    devices = dict(Run.objects.filter(pk__in=[run.pk for _, _, run in ranked]).values_list("pk", "result__device"))
    series = {g.pk: GpuSeries(key=g.slug, name=g.name, source="judged", gpu_name=g.name) for g in gpu_types}
    for gpu_type, submission, run in ranked:
        device = devices.get(run.pk) or {}
        series[gpu_type.pk].samples[submission.issue.code] = {
            "title": submission.issue.title, "ms": run.candidate_median_ms, "speedup": run.speedup,
            "weight": rule.weight_for(submission.issue).value, "source": "judged", "run": run.pk,
            "tflops": run.tflops, "gbps": run.bandwidth_gbs,
            "peak_tflops": device.get("peak_tflops"), "peak_gbps": device.get("peak_gbps")}
    for one in series.values():
        one.score = weights.weighted_geomean([(s["speedup"], s["weight"]) for s in one.samples.values()])
        one.roofline = _roofline(one.samples)
    return list(series.values())


def uploaded_gpu_label(gpu_name, uploader, organizer=False):
    """How an uploaded series is named: the GPU as the agent named it and who measured it, so that it
    never reads as the judged GPU type of the same name."""
    if uploader is None:
        return gettext("%(gpu)s, uploaded by an unknown uploader") % {"gpu": gpu_name}
    if organizer:
        return gettext("%(gpu)s, measured by %(uploader)s (organizer), uploaded") % {"gpu": gpu_name,
                                                                                    "uploader": uploader}
    return gettext("%(gpu)s, measured by %(uploader)s, uploaded") % {"gpu": gpu_name, "uploader": uploader}


def _benchmark_series(season):
    """One series per (uploader, GPU name): that uploader's newest benchmark run of this season from
    that GPU. Another uploader's run never replaces it, and none is merged with a judged GPU type."""
    newest = {}
    for pk, contestant_id, gpu_name in (BenchmarkRun.objects.filter(season=season).order_by("-created_at", "-pk")
                                        .values_list("pk", "contestant_id", "gpu_name")):
        newest.setdefault((contestant_id if contestant_id is not None else f"run{pk}", gpu_name), pk)
    runs = BenchmarkRun.objects.filter(pk__in=newest.values()).select_related("contestant__user")
    series = []
    for run in runs:
        uploader = run.contestant.display_name if run.contestant else None
        organizer = bool(run.contestant and run.contestant.is_organizer)
        one = GpuSeries(key=run.comparison_key, name=uploaded_gpu_label(run.gpu_name, uploader, organizer),
                        source="benchmark", score=run.speedup_score, relative_time_score=run.relative_time_score,
                        benchmark_run=run.pk, gpu_name=run.gpu_name, uploaded_by=uploader,
                        uploaded_by_organizer=organizer, uploaded_at=run.created_at, dataset_name=run.dataset_name,
                        dataset_version=run.dataset_version)
        for sample in run.samples:
            if sample.get("status") == "passed" and sample.get("candidate_ms"):
                one.samples[sample["id"]] = {
                    "title": sample.get("title") or "", "ms": sample["candidate_ms"], "speedup": sample.get("speedup"),
                    "weight": sample.get("weight"), "source": "benchmark", "run": run.pk,
                    **{key: sample.get(key) for key in ("tflops", "gbps", "peak_tflops", "peak_gbps")}}
        one.roofline = _roofline(one.samples)
        series.append(one)
    # by GPU name; the organizers' first, then by uploader
    return sorted(series, key=lambda g: (g.gpu_name, not g.uploaded_by_organizer, g.uploaded_by is None,
                                         g.uploaded_by or "", g.benchmark_run))


def _pick(gpus, key, which):
    if key in (None, ""):
        return None
    found = next((g for g in gpus if g.key == key), None)
    if found is None:
        raise ComparisonError(gettext("%(which)s: no GPU of this season is called '%(key)s'; the GPUs: %(known)s")
                              % {"which": which, "key": key[:100], "known": ", ".join(g.key for g in gpus) or "-"})
    return found


def bench_command(site_url):
    """The command that benchmarks a GPU on a season's dataset and uploads the run to this site; the
    token goes through the environment (a command line is visible to the host's other users)."""
    return f"PROFILER_AGENT_USER_TOKEN=TOKEN python -m profiler_agent bench DATASET --upload {site_url}"


def no_benchmark_run_line(command):
    """The JSON twin's line for a season without benchmark runs (the page shows the command apart)."""
    return gettext("No benchmark run has been uploaded for this season's dataset yet. To add one, run on a "
                   "machine with the GPU and the agent (pip install ./agent): %(command)s, where DATASET is the "
                   "season's exported dataset (its folder or .tar.gz) and TOKEN a personal API token from the "
                   "account page.") % {"command": command}


def gpu_comparison(season, a=None, b=None, hardware=None, site_url="SITE"):
    """Two GPUs compared on the samples both timed: per sample, b's candidate time over a's (the ratio),
    with each GPU's weighted score and roofline position. `a`/`b` name GPUs by key; left out, the two
    with the most timed samples. `error` says what is wrong with ?a=/?b= (then no rows); `missing`
    says what the page lacks (a second GPU, shared samples), and `bench_command` how to add the first
    benchmark run to `site_url` while there is none. `judged` and `uploaded` split `gpus`: the page
    shows uploads apart, naming who measured them."""
    judged, uploaded = _judged_series(season, hardware), _benchmark_series(season)
    gpus = judged + uploaded
    answer = {"gpus": gpus, "judged": judged, "uploaded": uploaded, "a": None, "b": None, "rows": [], "ratio_geomean": None, "error": None, "missing": [],
              "benchmark_runs": BenchmarkRun.objects.filter(season=season).count(), "bench_command": None}
    if not answer["benchmark_runs"]:
        answer["bench_command"] = bench_command(site_url)
    timed = sorted((g for g in gpus if g.samples), key=lambda g: -g.sample_count)
    if len(timed) < 2:
        answer["missing"].append(
            gettext("No GPU has timed samples yet: a comparison needs two.") if not timed else
            gettext("Only %(gpu)s has timed samples: a comparison needs a second GPU.") % {"gpu": timed[0].name})
    try:
        chosen_a, chosen_b = _pick(gpus, a, "a"), _pick(gpus, b, "b")
    except ComparisonError as error:
        answer["error"] = str(error)
        return answer
    defaults = [g for g in timed if g not in (chosen_a, chosen_b)]
    chosen_a = chosen_a or (defaults.pop(0) if defaults else None)
    chosen_b = chosen_b or (defaults.pop(0) if defaults else None)
    if chosen_a is not None and chosen_a is chosen_b:
        answer["error"] = gettext("a and b are both %(gpu)s: choose two different GPUs.") % {"gpu": chosen_a.key}
        return answer
    answer.update(a=chosen_a, b=chosen_b)
    if chosen_a is None or chosen_b is None:
        return answer
    for code in sorted(set(chosen_a.samples) & set(chosen_b.samples)):
        on_a, on_b = chosen_a.samples[code], chosen_b.samples[code]
        answer["rows"].append({"sample": code, "title": on_a["title"] or on_b["title"], "a_ms": on_a["ms"],
                               "b_ms": on_b["ms"], "ratio": on_b["ms"] / on_a["ms"],
                               "weight": on_a["weight"] if on_a["weight"] is not None else on_b["weight"],
                               "a_source": _source(on_a), "b_source": _source(on_b)})
    if not answer["rows"]:
        answer["missing"].append(gettext("%(a)s and %(b)s have no timed sample in common.")
                                 % {"a": chosen_a.name, "b": chosen_b.name})
    answer["ratio_geomean"] = weights.weighted_geomean([(r["ratio"], r["weight"] or 0) for r in answer["rows"]])
    return answer


def _source(sample):
    return {"kind": sample["source"], "run": sample["run"]}
