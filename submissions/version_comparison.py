"""One contestant's own submissions to an issue side by side, for the comparison page: per version
(each submission, oldest first) and GPU type, the speedup that ranks there (ranked_runs: the median of
its passed runs), else a passed figure still provisional (its owner sees it, marked), else the state
or verdict of its latest run. Nobody else's submissions are read."""
from dataclasses import dataclass
from typing import Optional

from django.db.models import Prefetch

from submissions.models import Run, RunStatus, Verdict
from submissions.rules import ranked_runs, timing_flags
from submissions.selectors import latest_runs


@dataclass
class Cell:
    run: Run  # the latest run there: its state or verdict when there is no figure
    speedup: Optional[float] = None
    runs_counted: int = 0  # passed runs the ranked figure is the median of (0: no ranked figure)
    provisional: bool = False  # a figure awaiting a second judging (or contradicted): it does not rank
    best: bool = False  # the best ranked figure of the versions on this GPU type


def _cell(run, figure):
    if figure is not None:
        return Cell(run=run, speedup=figure.speedup, runs_counted=figure.runs_counted)
    if run.status == RunStatus.DONE and run.verdict == Verdict.PASSED and timing_flags.is_provisional(run):
        return Cell(run=run, speedup=run.speedup, provisional=True)
    return Cell(run=run)


def own_versions(issue, user):
    """{"gpu_types": the GPU types any version was judged on, by slug; "rows": per version, oldest
    first, {"version", "submission", "cells"} (a Cell per GPU type, None where that version has no
    run)}. Only `user`'s own submissions."""
    if not user.is_authenticated:
        return {"gpu_types": [], "rows": []}
    runs = Run.objects.defer("result").select_related("gpu_type")
    submissions = list(issue.submissions.filter(contestant__user=user)
                       .prefetch_related(Prefetch("runs", queryset=runs)).order_by("created_at", "pk"))
    gpu_types = sorted({run.gpu_type for s in submissions for run in s.runs.all()}, key=lambda g: g.slug)
    rows = []
    for version, submission in enumerate(submissions, start=1):
        figures = ranked_runs.by_gpu_type(submission.runs.all())
        latest = {run.gpu_type_id: run for run in latest_runs(submission)}
        rows.append({"version": version, "submission": submission,
                     "cells": [_cell(latest[g.pk], figures.get(g.pk)) if g.pk in latest else None
                               for g in gpu_types]})
    for column in range(len(gpu_types)):
        ranked = [row["cells"][column] for row in rows
                  if row["cells"][column] is not None and row["cells"][column].runs_counted]
        if ranked:
            max(ranked, key=lambda cell: cell.speedup).best = True
    return {"gpu_types": gpu_types, "rows": rows}
