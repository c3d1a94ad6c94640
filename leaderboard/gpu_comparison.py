"""Comparing two GPUs on a season's samples: the judged runs' series per GPU type, the GPU benchmark
uploads, and the comparison the hardware page and its API show."""
from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

from django.utils.translation import gettext

from leaderboard.selectors import hardware_comparison
from submissions.models import BenchmarkRun, Run
from submissions.rules import weights


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


def _judged_series(season, hardware=None, freeze=None):
    """Each GPU type of the season with the ranked run of every accepted sample that has one
    (`hardware`: hardware_comparison(season, freeze), where the caller has it already)."""
    rule = weights.rule_of(season)
    gpu_types, rows = hardware or hardware_comparison(season, freeze)
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


def benchmark_runs(season, freeze=None):
    """The season's uploaded benchmark runs (`freeze`: those uploaded by then)."""
    runs = BenchmarkRun.objects.filter(season=season)
    return runs if freeze is None else runs.filter(created_at__lte=freeze.frozen_at)


def _benchmark_series(season, freeze=None):
    """One series per (uploader, GPU name): that uploader's newest benchmark run of this season from
    that GPU. Another uploader's run never replaces it, and none is merged with a judged GPU type."""
    newest = {}
    for pk, contestant_id, gpu_name in (benchmark_runs(season, freeze).order_by("-created_at", "-pk")
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


def gpu_comparison(season, a=None, b=None, hardware=None, site_url="SITE", freeze=None):
    """Two GPUs compared on the samples both timed: per sample, b's candidate time over a's (the ratio),
    with each GPU's weighted score and roofline position. `a`/`b` name GPUs by key; left out, the two
    with the most timed samples. `error` says what is wrong with ?a=/?b= (then no rows); `missing`
    says what the page lacks (a second GPU, shared samples), and `bench_command` how to add the first
    benchmark run to `site_url` while there is none. `judged` and `uploaded` split `gpus`: the page
    shows uploads apart, naming who measured them. `freeze` (figures_freeze): as the season was then."""
    judged, uploaded = _judged_series(season, hardware, freeze), _benchmark_series(season, freeze)
    gpus = judged + uploaded
    answer = {"gpus": gpus, "judged": judged, "uploaded": uploaded, "a": None, "b": None, "rows": [], "ratio_geomean": None, "error": None, "missing": [],
              "benchmark_runs": benchmark_runs(season, freeze).count(), "bench_command": None}
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
