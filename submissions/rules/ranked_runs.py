"""Which run of a submission counts on a GPU type: its ranked figure (docs/architecture.md, "The
ranked figure"). Rejudges add runs and never overwrite old ones, and one host's timing can differ from
the next by a lot (a CPU bundle judged five times: 8.15x, 7.75x, 7.74x, 6.09x, 0.93x), so taking the
best run would reward rejudging until lucky. The figure is the median:

- it exists where the submission's latest judgement on that GPU type passed (runs still queued or
  running, runs the platform failed (`internal_error`) and cancelled runs are no judgement of it);
- it is the run with the median speedup among the passed runs whose time may rank there
  (timing_flags.ranks: no time awaiting an organizer's clearance), the lower of the two middle
  ones for an even count: always a measured run, so its times, throughput and bandwidth belong
  together, and the more cautious of the two.
"""
from dataclasses import dataclass

from submissions.models import RunStatus, Verdict
from submissions.rules import timing_flags

# Verdicts that say nothing about the submission: the platform's failure and a cancel.
NOT_A_JUDGEMENT = (Verdict.INTERNAL_ERROR, Verdict.CANCELLED)


@dataclass(frozen=True)
class Figure:
    run: object  # the run whose speedup ranks
    runs_counted: int  # how many passed runs the median was taken over

    @property
    def speedup(self):
        return self.run.speedup


def _newest(runs):
    return max(runs, key=lambda r: (r.created_at, r.pk))


def figure(runs):
    """The ranked figure of one submission's runs on one GPU type, or None."""
    judged = [r for r in runs if r.status == RunStatus.DONE and r.verdict not in NOT_A_JUDGEMENT]
    if not judged or _newest(judged).verdict != Verdict.PASSED:
        return None
    counted = sorted((r for r in judged if timing_flags.ranks(r) and r.speedup),
                     key=lambda r: (r.speedup, r.created_at, r.pk))
    if not counted:
        return None
    return Figure(counted[(len(counted) - 1) // 2], len(counted))


def figures(runs):
    """{(submission id, GPU type id): Figure} over any runs (of one submission or many)."""
    grouped = {}
    for run in runs:
        grouped.setdefault((run.submission_id, run.gpu_type_id), []).append(run)
    ranked = {key: figure(group) for key, group in grouped.items()}
    return {key: value for key, value in ranked.items() if value is not None}


def by_gpu_type(runs):
    """{GPU type id: Figure} of one submission's runs."""
    return {gpu_type_id: value for (_, gpu_type_id), value in figures(runs).items()}


# The columns a query needs for figures() (the result JSON is not one of them).
FIELDS = ("submission_id", "gpu_type_id", "status", "verdict", "speedup", "flags", "created_at")


def summary(runs):
    """{GPU type slug: {"speedup", "run", "runs_counted"}} of one submission's runs (for the APIs)."""
    runs = list(runs)
    slugs = {r.gpu_type_id: r.gpu_type.slug for r in runs}
    return {slugs[g]: {"speedup": f.speedup, "run": f.run.pk, "runs_counted": f.runs_counted}
            for g, f in sorted(by_gpu_type(runs).items(), key=lambda item: slugs[item[0]])}
