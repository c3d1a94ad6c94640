"""Abuse detection (seed 001's rules): flags for the organizer, never automatic rejections.

- same_operator: the reference matches one already submitted for another issue of the season.
- near_copy: the candidate is a near-copy of another contestant's candidate (token shingles).
- no_improvement: once judged, the speedup is not better than the same contestant's earlier
  accepted submission of the same operator.
Rate limits per contestant are checked here too, before a submission or an issue is stored.
"""
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import formats, timezone
from django.utils.translation import ngettext

from submissions import fingerprints
from submissions.bundles import CANDIDATE_NAMES, REFERENCE_NAMES
from submissions.models import FlagKind, Issue, ReviewDecision, Submission, SubmissionFlag, SubmissionMode
from submissions.rules import ranked_runs
from submissions.services import audit


class RateLimited(ValueError):
    """Too many submissions (or issues) in a window; the message says when the next one is possible,
    `retry_after_s` in how many seconds."""

    def __init__(self, message, retry_after_s=None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _limits(season, mode=SubmissionMode.RANKED):
    """Each mode has its own limits: a season's own apply to ranked submissions, test, benchmark and profile
    ones have the site's (TEST_SUBMISSIONS_PER_*, BENCHMARK_SUBMISSIONS_PER_*, PROFILE_SUBMISSIONS_PER_*)."""
    if mode == SubmissionMode.TEST:
        hour, day = settings.TEST_SUBMISSIONS_PER_HOUR, settings.TEST_SUBMISSIONS_PER_DAY
        return ((timedelta(hours=1), hour, _tests_in_hour), (timedelta(days=1), day, _tests_in_day))
    if mode == SubmissionMode.BENCHMARK:
        hour, day = settings.BENCHMARK_SUBMISSIONS_PER_HOUR, settings.BENCHMARK_SUBMISSIONS_PER_DAY
        return ((timedelta(hours=1), hour, _benchmarks_in_hour), (timedelta(days=1), day, _benchmarks_in_day))
    if mode == SubmissionMode.PROFILE:
        hour, day = settings.PROFILE_SUBMISSIONS_PER_HOUR, settings.PROFILE_SUBMISSIONS_PER_DAY
        return ((timedelta(hours=1), hour, _profiles_in_hour), (timedelta(days=1), day, _profiles_in_day))
    hour = season.max_submissions_per_hour or settings.SUBMISSIONS_PER_HOUR
    day = season.max_submissions_per_day or settings.SUBMISSIONS_PER_DAY
    return ((timedelta(hours=1), hour, _refused_in_hour), (timedelta(days=1), day, _refused_in_day))


def _tests_in_hour(limit):
    return ngettext("you made %(count)s test submission in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s",
                    "you made %(count)s test submissions in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s", limit)


def _tests_in_day(limit):
    return ngettext("you made %(count)s test submission in season %(season)s in the last day, the limit; "
                    "try again after %(when)s",
                    "you made %(count)s test submissions in season %(season)s in the last day, the limit; "
                    "try again after %(when)s", limit)


def _benchmarks_in_hour(limit):
    return ngettext("you made %(count)s benchmark submission in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s",
                    "you made %(count)s benchmark submissions in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s", limit)


def _benchmarks_in_day(limit):
    return ngettext("you made %(count)s benchmark submission in season %(season)s in the last day, the limit; "
                    "try again after %(when)s",
                    "you made %(count)s benchmark submissions in season %(season)s in the last day, the limit; "
                    "try again after %(when)s", limit)


def _profiles_in_hour(limit):
    return ngettext("you asked for %(count)s profile in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s",
                    "you asked for %(count)s profiles in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s", limit)


def _profiles_in_day(limit):
    return ngettext("you asked for %(count)s profile in season %(season)s in the last day, the limit; "
                    "try again after %(when)s",
                    "you asked for %(count)s profiles in season %(season)s in the last day, the limit; "
                    "try again after %(when)s", limit)


def _refused_in_hour(limit):
    return ngettext("you made %(count)s submission in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s",
                    "you made %(count)s submissions in season %(season)s in the last hour, the limit; "
                    "try again after %(when)s", limit)


def _refused_in_day(limit):
    return ngettext("you made %(count)s submission in season %(season)s in the last day, the limit; "
                    "try again after %(when)s",
                    "you made %(count)s submissions in season %(season)s in the last day, the limit; "
                    "try again after %(when)s", limit)


def _check_windows(recent, now, limits, fill):
    """Raise RateLimited when `recent` (rows with created_at) holds `limit` rows within a window."""
    for window, limit, message in limits:
        if not limit:
            continue
        in_window = recent.filter(created_at__gte=now - window)
        count = in_window.count()
        if count >= limit:
            oldest = in_window.order_by("created_at").values_list("created_at", flat=True)[count - limit]
            # In the reader's date format, with the zone named (the site's TIME_ZONE).
            retry = timezone.localtime(oldest + window)
            when = f"{formats.date_format(retry, 'DATETIME_FORMAT')} {retry.tzname()}"
            raise RateLimited(message(limit) % dict(fill, count=limit, when=when),
                              retry_after_s=max(1, int((oldest + window - now).total_seconds()) + 1))


def check_rate_limit(contestant, season, now=None, mode=SubmissionMode.RANKED):
    """The contestant's submissions of this mode in the season, within each of the mode's windows."""
    now = now or timezone.now()
    _check_windows(Submission.objects.filter(contestant=contestant, issue__season=season, mode=mode), now,
                   _limits(season, mode), {"season": season.code})


def _issues_opened_in_hour(limit):
    return ngettext("you opened %(count)s issue in the last hour, the limit; try again after %(when)s",
                    "you opened %(count)s issues in the last hour, the limit; try again after %(when)s", limit)


def _issues_opened_in_day(limit):
    return ngettext("you opened %(count)s issue in the last day, the limit; try again after %(when)s",
                    "you opened %(count)s issues in the last day, the limit; try again after %(when)s", limit)


def check_issue_rate_limit(contestant, now=None):
    """At most ISSUES_PER_HOUR and ISSUES_PER_DAY issues opened by one contestant (0: no limit). The
    caller holds the contestant's row lock, so concurrent requests are all counted."""
    now = now or timezone.now()
    limits = ((timedelta(hours=1), settings.ISSUES_PER_HOUR, _issues_opened_in_hour),
              (timedelta(days=1), settings.ISSUES_PER_DAY, _issues_opened_in_day))
    _check_windows(Issue.objects.filter(author=contestant), now, limits, {})


def fingerprint_submission(submission, files):
    """Store the submission's fingerprints (files: path -> text)."""
    reference = next((files[n] for n in REFERENCE_NAMES if n in files), "")
    candidate = next((files[n] for n in CANDIDATE_NAMES if n in files), "")
    submission.reference_fingerprint = fingerprints.reference_fingerprint(reference) if reference else ""
    submission.candidate_shingles = fingerprints.candidate_shingles(candidate) if candidate else []
    submission.save(update_fields=["reference_fingerprint", "candidate_shingles"])


def _flag(submission, kind, detail, other=None, similarity=None):
    flag, created = SubmissionFlag.objects.get_or_create(
        submission=submission, kind=kind, other_submission=other,
        defaults={"detail": detail, "similarity": similarity},
    )
    if created:
        audit.record("flag.raised", submission, actor_label="abuse-detector",
                     after={"kind": kind, "other_submission": other.pk if other else None, "similarity": similarity},
                     reason=detail)
    return flag


def check_on_submit(submission):
    """Flags that need only the code: same operator elsewhere, near-copies of others' candidates. Only
    ranked submissions are flagged or compared: a test or benchmark run is never reviewed."""
    if submission.mode != SubmissionMode.RANKED:
        return
    season_submissions = (Submission.objects.filter(issue__season_id=submission.issue.season_id,
                                                    mode=SubmissionMode.RANKED).exclude(pk=submission.pk))
    if submission.reference_fingerprint:
        same = (season_submissions.filter(reference_fingerprint=submission.reference_fingerprint)
                .exclude(issue_id=submission.issue_id).select_related("issue", "contestant").order_by("created_at").first())
        if same is not None:
            _flag(submission, FlagKind.SAME_OPERATOR,
                  f"the same operator (torchcode.py) was submitted as #{same.pk} for issue {same.issue.code} "
                  f"by {same.contestant.display_name}", other=same, similarity=100.0)
    threshold = settings.NEAR_COPY_THRESHOLD_PERCENT
    if submission.candidate_shingles:
        matches = []
        others = season_submissions.exclude(contestant_id=submission.contestant_id).exclude(candidate_shingles=[])
        # Bounded work per submission: every other version of the same operator, and the most recent others.
        same_reference = others.filter(reference_fingerprint=submission.reference_fingerprint).values_list("pk", flat=True)
        recent = others.order_by("-created_at").values_list("pk", flat=True)[:settings.NEAR_COPY_SCAN_RECENT]
        scanned = set(same_reference[:settings.NEAR_COPY_SCAN_RECENT]) | set(recent)
        for other in Submission.objects.filter(pk__in=scanned).select_related("issue", "contestant").only(
                "pk", "candidate_shingles", "issue__code", "contestant__display_name", "created_at"):
            percent = fingerprints.similarity_percent(submission.candidate_shingles, other.candidate_shingles)
            if percent >= threshold:
                matches.append((percent, other))
        for percent, other in sorted(matches, key=lambda m: (-m[0], m[1].pk))[:5]:
            _flag(submission, FlagKind.NEAR_COPY,
                  f"the CUDA code is {percent:.0f}% similar to #{other.pk} ({other.issue.code}) "
                  f"by {other.contestant.display_name}", other=other, similarity=round(percent, 1))


def _best_speedups(submission):
    """The ranked speedup per GPU type slug (ranked_runs: the median of its passed runs there)."""
    return {slug: figure["speedup"] for slug, figure in ranked_runs.summary(submission.runs.all()).items()}


def _is_accepted(submission):
    latest = submission.reviews.order_by("-created_at", "-pk").first()
    return latest is not None and latest.decision == ReviewDecision.ACCEPTED


def check_after_judging(submission):
    """The 'similar optimization' rule, once every run is done: a speedup no better than the
    contestant's earlier accepted submission of the same operator (same issue or same reference)."""
    if submission.mode != SubmissionMode.RANKED:
        return
    new = _best_speedups(submission)
    if not new:
        return
    same_operator = Q(issue_id=submission.issue_id)
    if submission.reference_fingerprint:
        same_operator |= Q(reference_fingerprint=submission.reference_fingerprint)
    earlier = (Submission.objects.filter(same_operator, contestant_id=submission.contestant_id,
                                         issue__season_id=submission.issue.season_id, created_at__lte=submission.created_at)
               .exclude(pk=submission.pk).prefetch_related("runs__gpu_type", "reviews").order_by("-created_at"))
    for previous in earlier:
        if not _is_accepted(previous):
            continue
        old = _best_speedups(previous)
        common = sorted(set(old) & set(new))
        if common and all(new[g] <= old[g] for g in common):
            compared = ", ".join(f"{g}: {new[g]:.2f}× vs {old[g]:.2f}×" for g in common)
            _flag(submission, FlagKind.NO_IMPROVEMENT,
                  f"no better speedup than the accepted #{previous.pk} of the same operator ({compared})",
                  other=previous)
            return
