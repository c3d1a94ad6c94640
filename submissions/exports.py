"""CSV exports for organizers: submissions, reviews, standings and the audit trail."""
import csv
import json

from submissions import board_ranks
from submissions.models import AuditEntry, Review, Standing, Submission, SubmissionMode
from submissions.rules import ranked_runs


def _json(value):
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _submissions(season):
    # ranked submissions only: a test or benchmark one is its owner's, never exported
    rows = (Submission.objects.filter(mode=SubmissionMode.RANKED).select_related("issue__season", "contestant")
            .prefetch_related("runs__gpu_type", "abuse_flags"))
    if season is not None:
        rows = rows.filter(issue__season=season)
    yield ["id", "season", "issue", "contestant", "source", "pr_url", "pr_commit", "bundle_sha256", "created_at",
           "runs", "flags", "ranked"]
    for s in rows.order_by("pk"):
        runs = "; ".join(f"{r.gpu_type.slug}:{r.verdict or r.status}:{r.speedup or ''}" for r in s.runs.all())
        flags = "; ".join(f"{f.kind}:{f.other_submission_id or ''}" for f in s.abuse_flags.all())
        # the figure that ranks per GPU type: slug:speedup:how many passed runs it is the median of
        ranked = "; ".join(f"{slug}:{f['speedup']}:{f['runs_counted']}"
                           for slug, f in ranked_runs.summary(s.runs.all()).items())
        yield [s.pk, s.issue.season.code, s.issue.code, s.contestant.display_name, s.source, s.pr_url, s.pr_commit,
               s.bundle_sha256, s.created_at.isoformat(), runs, flags, ranked]


def _reviews(season):
    rows = Review.objects.select_related("submission__issue__season", "reviewer")
    if season is not None:
        rows = rows.filter(submission__issue__season=season)
    yield ["id", "submission", "season", "issue", "reviewer", "decision", "reason", "rubric", "rubric_prefill",
           "override_reason", "base_score", "bonus", "created_at", "acceptance_override"]
    for r in rows.order_by("pk"):
        yield [r.pk, r.submission_id, r.submission.issue.season.code, r.submission.issue.code, r.reviewer.get_username(),
               r.decision, r.reason, _json(r.rubric), _json(r.rubric_prefill), r.override_reason, r.base_score, r.bonus,
               r.created_at.isoformat(), r.acceptance_override]


def _standings(season):
    rows = Standing.objects.select_related("season", "contestant")
    if season is not None:
        rows = rows.filter(season=season)
    yield ["season", "rank", "contestant", "affiliation", "accepted_count", "base_score", "bonus", "total_score",
           "submission_count", "first_submission_at", "best_speedup"]
    ranked = board_ranks.in_order(rows.order_by("season__code", "board_key", "contestant_id"), lambda s: s.season_id)
    for s in ranked:
        yield [s.season.code, s.rank, s.contestant.display_name, s.contestant.affiliation, s.accepted_count,
               s.base_score, s.bonus, s.total_score, s.submission_count,
               s.first_submission_at.isoformat() if s.first_submission_at else "", s.best_speedup]


def _audit(season):
    yield ["id", "created_at", "actor", "action", "object_type", "object_id", "before", "after", "reason"]
    for e in AuditEntry.objects.order_by("pk").iterator():
        yield [e.pk, e.created_at.isoformat(), e.actor_label, e.action, e.object_type, e.object_id, _json(e.before),
               _json(e.after), e.reason]


EXPORTS = {"submissions": _submissions, "reviews": _reviews, "standings": _standings, "audit": _audit}


class _Echo:
    def write(self, value):
        return value


# A spreadsheet runs a cell that starts with one of these as a formula (`=HYPERLINK(...)` as a display
# name): such text gets a leading single quote, which shows it as typed (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_lines(kind, season=None):
    """The export as an iterator of CSV lines (streamed: the audit trail grows without bound)."""
    writer = csv.writer(_Echo())
    return (writer.writerow([inert_cell(value) for value in row]) for row in EXPORTS[kind](season))
