"""Read-side queries of the contest domain."""
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, TextChoices
from django.utils.translation import gettext_lazy as _

from submissions import freeze_reads
from submissions.models import AuditEntry, Issue, ReviewDecision, Run, RunStatus, Season, Submission, SubmissionMode, Verdict
from submissions.rules import ranked_runs, weights
from submissions.services import scheduling


def submission_with_runs(submission_id):
    return (
        Submission.objects.select_related("issue__season", "contestant__user")
        .prefetch_related("files", Prefetch("runs", queryset=Run.objects.select_related("gpu_type").order_by("gpu_type__slug", "-created_at")))
        .filter(pk=submission_id)
        .first()
    )


def is_organizer(user) -> bool:
    return user.is_authenticated and user.is_staff


def latest_review(submission, since=None):
    """The latest review (made by `since`, a freeze's time, when given)."""
    reviews = submission.reviews.all() if since is None else submission.reviews.filter(created_at__lte=since)
    return reviews.order_by("-created_at", "-pk").first()


def is_accepted(submission, since=None) -> bool:
    review = latest_review(submission, since)
    return review is not None and review.decision == ReviewDecision.ACCEPTED


def is_own(user, submission) -> bool:
    """Whether `user` is the contestant who submitted it."""
    return user.is_authenticated and submission.contestant.user_id == user.pk


def _is_author_or_organizer(user, submission) -> bool:
    return user.is_authenticated and (user.is_staff or submission.contestant.user_id == user.pk)


def can_see_submission(user, submission) -> bool:
    """A ranked submission is anyone's to see (its code as can_see_code says); a test or benchmark one
    is its owner's and the organizers' alone."""
    return submission.mode == SubmissionMode.RANKED or _is_author_or_organizer(user, submission)


def visible_to(rows, user):
    """The submissions (a queryset) `user` may see: ranked ones, and their own and organizers' others."""
    if user.is_authenticated and user.is_staff:
        return rows
    if user.is_authenticated:
        return rows.filter(Q(mode=SubmissionMode.RANKED) | Q(contestant__user=user))
    return rows.filter(mode=SubmissionMode.RANKED)


def can_see_provisional(user, submission) -> bool:
    """A figure awaiting a second judging (timing_flags.is_provisional): its owner and organizers only."""
    return _is_author_or_organizer(user, submission)


def _season_shows_code(submission) -> bool:
    season = submission.issue.season
    return season.code_public_after_end and season.has_ended


def can_see_code(user, submission) -> bool:
    """Code and logs: the author and organizers always; everyone once the submission is accepted,
    or once its season has ended where the season says so. In a season whose results are frozen for
    `user`, an acceptance made since the freeze shows nothing until the thaw (freeze_reads)."""
    if _is_author_or_organizer(user, submission):
        return True
    if submission.mode != SubmissionMode.RANKED:
        return False
    since = freeze_reads.Viewer(user).submission_held_since(submission)
    return is_accepted(submission, since) or _season_shows_code(submission)


class SubmissionState(TextChoices):
    """Where a submission stands for its contestant: judged, then waiting for an organizer's review
    (whether or not every run passed: the review queue holds both), then reviewed."""
    JUDGING = "judging", _("Judging")
    PASSED_AWAITING_REVIEW = "passed_awaiting_review", _("Passed — awaiting review")
    AWAITING_REVIEW = "awaiting_review", _("Did not pass — awaiting review")
    ACCEPTED = "accepted", _("Accepted")
    REJECTED = "rejected", _("Rejected")
    # a test or benchmark submission is never reviewed: once judged, it passed or it did not
    PASSED = "passed", _("Passed")
    FAILED = "failed", _("Did not pass")
    # every run cancelled, by its contestant or an organizer: nothing was judged, nothing to review
    CANCELLED = "cancelled", _("Cancelled")


def submission_state(submission, *, runs=None, reviews=None) -> SubmissionState:
    """The latest review's decision when there is one (a rejudge under way does not undo it), else from
    the latest runs (latest_runs, the verdicts shown): judging while one is unfinished, then awaiting
    review. Reads `submission.reviews.all()` and `.runs.all()` (or the `runs` and `reviews` given: those
    a freeze shows, freeze_reads): prefetch them (runs with gpu_type) for a list."""
    reviews = submission.reviews.all() if reviews is None else reviews
    review = max(reviews, key=lambda r: (r.created_at, r.pk), default=None)
    if review is not None:
        return SubmissionState(review.decision)
    runs = latest_runs(submission, runs)
    if not runs or any(run.status != RunStatus.DONE for run in runs):
        return SubmissionState.JUDGING
    if all(run.verdict == Verdict.CANCELLED for run in runs):  # latest_runs shows a cancel only where all are
        return SubmissionState.CANCELLED
    passed = all(run.verdict == Verdict.PASSED for run in runs)
    if submission.mode != SubmissionMode.RANKED:
        return SubmissionState.PASSED if passed else SubmissionState.FAILED
    if passed:
        return SubmissionState.PASSED_AWAITING_REVIEW
    return SubmissionState.AWAITING_REVIEW


def visible_state(user, submission, held=None):
    """submission_state for whoever may see its reviews (as its code, can_see_code), else None: that a
    submission was rejected, or still waits, is its author's and the organizers' to know. In a season
    whose results are frozen for `user` (held: a freeze_reads.Viewer of theirs), the state the runs and
    reviews it shows make (freeze_reads: none finished or made since the freeze)."""
    since = (held or freeze_reads.Viewer(user)).submission_held_since(submission)
    if since is None:
        state = submission_state(submission)
    else:
        state = submission_state(submission, runs=freeze_reads.shown_runs(submission.runs.all(), since),
                                 reviews=freeze_reads.reviews_shown(submission.reviews.all(), since))
    if state == SubmissionState.ACCEPTED or _is_author_or_organizer(user, submission) or _season_shows_code(submission):
        return state
    return None


def with_states(submissions, user):
    """The submissions (a list), each with `state`: visible_state for `user`. Prefetch their runs (with
    gpu_type) and reviews, and select issue__season and contestant."""
    held = freeze_reads.Viewer(user)
    for submission in submissions:
        submission.state = visible_state(user, submission, held)
    return submissions


def contestant_submissions_query(contestant, season=None):
    """The contestant's submissions (to one season's issues, when given), newest first."""
    rows = contestant.submissions.all()
    if season is not None:
        rows = rows.filter(issue__season=season)
    return rows.order_by("-created_at", "-pk")


def contestant_submissions(contestant, user, limit=50, *, offset=0, season=None):
    """A page of contestant_submissions_query, each submission with its `state` for `user`."""
    return with_states(list(
        contestant_submissions_query(contestant, season).select_related("issue__season", "contestant")
        .prefetch_related(Prefetch("runs", queryset=Run.objects.defer("result").select_related("gpu_type")), "reviews")
        [offset:offset + limit]), user)


def review_queue(*, include_reviewed=False, season=None, flagged_only=False):
    """Submissions whose runs all finished, flagged ones first, then oldest first; not one whose every
    run was cancelled (SubmissionState.CANCELLED: nothing was judged), unless it was reviewed anyway."""
    unfinished = Run.objects.filter(submission=OuterRef("pk")).exclude(status=RunStatus.DONE)
    judged = Run.objects.filter(submission=OuterRef("pk")).exclude(verdict=Verdict.CANCELLED)
    rows = (Submission.objects.select_related("issue__season", "contestant")
            .annotate(flag_count=Count("abuse_flags", distinct=True), run_count=Count("runs", distinct=True),
                      review_count=Count("reviews", distinct=True))
            .filter(run_count__gt=0, mode=SubmissionMode.RANKED).exclude(Exists(unfinished)).filter(Q(Exists(judged)) | Q(review_count__gt=0)))
    if season is not None:
        rows = rows.filter(issue__season=season)
    if not include_reviewed:
        rows = rows.filter(review_count=0)
    if flagged_only:
        rows = rows.filter(flag_count__gt=0)
    return rows.order_by("-flag_count", "created_at", "pk")


def review_queue_rows(submissions):
    """The queue's rows: each submission with, per GPU type, its latest run (the verdict shown) and its
    ranked figure (ranked_runs), and each kind of abuse flag once with how many there are."""
    submissions = list(submissions.prefetch_related(
        Prefetch("runs", queryset=Run.objects.defer("result").select_related("gpu_type")), "abuse_flags"))
    rows = []
    for submission in submissions:
        ranked = ranked_runs.by_gpu_type(submission.runs.all())
        counts = {}
        for flag in submission.abuse_flags.all():
            label, count = counts.get(flag.kind, (flag.get_kind_display(), 0))
            counts[flag.kind] = (label, count + 1)
        rows.append({
            "submission": submission,
            "gpu_rows": [{"run": run, "ranked": ranked.get(run.gpu_type_id)} for run in latest_runs(submission)],
            "flags": [{"kind": kind, "label": label, "count": count} for kind, (label, count) in sorted(counts.items())],
        })
    return rows


def audit_for_submission(submission):
    """Every audit entry about the submission, its runs and its reviews, newest first."""
    run_ids = [str(pk) for pk in submission.runs.values_list("pk", flat=True)]
    return AuditEntry.objects.filter(
        Q(object_type="submission", object_id=str(submission.pk)) | Q(object_type="run", object_id__in=run_ids)
        | Q(object_type="standing", reason__startswith=f"review of #{submission.pk}:")
    ).order_by("-created_at", "-pk")


def similar_submissions(submission, limit=10):
    """Other submissions of the same operator (same normalized reference) in the season."""
    if not submission.reference_fingerprint:
        return Submission.objects.none()
    return (Submission.objects.filter(issue__season_id=submission.issue.season_id, mode=SubmissionMode.RANKED,
                                      reference_fingerprint=submission.reference_fingerprint)
            .exclude(pk=submission.pk).select_related("issue", "contestant").order_by("-created_at")[:limit])


def has_unfinished_runs(submission) -> bool:
    return any(run.status != RunStatus.DONE for run in submission.runs.all())


def run_elapsed_s(run, now):
    """Whole seconds the run has waited (since it was made or queued) or been judged (since its agent
    started it); None once it is done."""
    since = {RunStatus.WAITING: run.created_at, RunStatus.QUEUED: run.enqueued_at or run.created_at,
             RunStatus.RUNNING: run.started_at}.get(run.status)
    return max(0, int((now - since).total_seconds())) if since else None


def live_stage(run):
    """What a running run's agent last reported; "" before its first report, or when it is not running
    (a stage left from an attempt that ended means nothing)."""
    return run.stage if run.status == RunStatus.RUNNING else ""


def run_progress(run, now):
    """Where an unfinished run stands, as the submission's page and the API show it live: `stage`
    (live_stage), `queue_position` (scheduling.queue_position; None when it is not in Redis, or Redis
    cannot be read), `runs_ahead` (a waiting run: the contestant's runs going first) and `elapsed_s`
    (run_elapsed_s)."""
    try:
        position = scheduling.queue_position(run)
    except Exception:  # the page and the API still answer when Redis is away
        position = None
    return {"stage": live_stage(run), "queue_position": position, "runs_ahead": scheduling.runs_ahead(run),
            "elapsed_s": run_elapsed_s(run, now)}


def latest_runs(submission, runs=None):
    """The newest run per GPU type (rejudges add runs; older ones stay in history). A cancelled run
    stands only where no other run of that type exists: a cancelled rejudge leaves the verdict as it was.
    `runs`: of the submission's, those to choose from (None: all)."""
    def rank(run):
        return (run.verdict != Verdict.CANCELLED, run.created_at, run.pk)

    latest = {}
    for run in (submission.runs.all() if runs is None else runs):
        current = latest.get(run.gpu_type_id)
        if current is None or rank(run) > rank(current):
            latest[run.gpu_type_id] = run
    return sorted(latest.values(), key=lambda r: r.gpu_type.slug)


def latest_runs_with_confirmed(submission):
    """latest_runs, each second judging preceded by the run it judges again (services/confirming.py):
    that run's figure is what awaits it, or what it confirmed or contradicted."""
    by_pk = {run.pk: run for run in submission.runs.all()}
    shown = []
    for run in latest_runs(submission):
        shown += [by_pk[run.confirms_id], run] if run.confirms_id in by_pk else [run]
    return shown


def search_issues(*, q="", season=None, framework="", level=None, author=None):
    rows = (Issue.objects.select_related("season", "author")
            .annotate(submission_count=Count("submissions", distinct=True)))
    if q:
        rows = rows.filter(Q(code__iexact=q.strip()) | Q(title__icontains=q) | Q(operator__icontains=q)
                           | Q(description__icontains=q))
    if season is not None:
        rows = rows.filter(season=season)
    if framework:
        rows = rows.filter(framework=framework)
    if level:
        rows = rows.filter(level=level)
    if author is not None:
        rows = rows.filter(author=author)
    return rows.order_by("-created_at", "-pk")


def with_best_speedups(issues, user=None):
    """The issues (a list) with `best_speedup`: the best ranked figure (ranked_runs) of their
    submissions on any GPU type, never the best single run; of the runs `user` is shown (freeze_reads:
    in a season frozen for them, none that finished since the freeze but their own)."""
    seasons = {issue.season_id: issue.season for issue in issues}
    owners = {pk: (issue_id, owner) for pk, issue_id, owner in Submission.objects.filter(
        issue__in=issues, mode=SubmissionMode.RANKED).values_list("pk", "issue_id", "contestant__user_id")}
    season_of = {issue.pk: seasons[issue.season_id] for issue in issues}
    held = freeze_reads.Viewer(user)
    runs = {}
    for run in Run.objects.filter(submission_id__in=owners).only(*ranked_runs.FIELDS, "finished_at", "confirms_id"):
        runs.setdefault(run.submission_id, []).append(run)
    best = {}
    for submission_id, group in runs.items():
        issue_id, owner = owners[submission_id]
        shown = freeze_reads.shown_runs(group, held.held_since(season_of[issue_id], owner))
        for figure in ranked_runs.by_gpu_type(shown).values():
            best[issue_id] = max(best.get(issue_id, 0.0), figure.speedup)
    for issue in issues:
        issue.best_speedup = best.get(issue.pk)
    return issues


def issue_history(issue, user):
    """The issue's submissions oldest first, numbered as versions; each with its runs per GPU type
    (`gpu_rows`: the latest run, whose state and verdict show, the ranked figure there, and whether a
    freeze hides its result from `user`, freeze_reads), its best ranked speedup and its `state` for
    `user` (with_states)."""
    submissions = with_states(list(visible_to(issue.submissions.all(), user).select_related("contestant", "issue__season")
                                   .prefetch_related("runs__gpu_type", "reviews").order_by("created_at", "pk")), user)
    held = freeze_reads.Viewer(user)
    for version, submission in enumerate(submissions, start=1):
        submission.version = version
        runs = list(submission.runs.all())
        hidden = freeze_reads.as_shown(runs, held.submission_held_since(submission))
        ranked = ranked_runs.by_gpu_type([run for run in runs if run.pk not in hidden])
        submission.gpu_rows = [{"run": run, "ranked": ranked.get(run.gpu_type_id), "hidden": run.pk in hidden}
                               for run in latest_runs(submission)]
        submission.best_speedup = max((f.speedup for f in ranked.values()), default=None)
    return list(reversed(submissions))


def open_seasons():
    """The seasons taking submissions now, by code."""
    return Season.objects.filter(is_open=True).order_by("code")


def accepted_samples(season):
    """The season's dataset samples, oldest issue first: per issue, its latest submission whose latest
    review accepts it (the one the standings count, services/standings.py), as (submission, review);
    the submission comes with its issue, author, files and runs (with their GPU types)."""
    submissions = (Submission.objects.filter(issue__season=season, mode=SubmissionMode.RANKED)
                   .select_related("issue__season", "contestant")
                   .prefetch_related("reviews", "files", Prefetch("runs", queryset=Run.objects.select_related("gpu_type"))))
    counted = {}
    for submission in sorted(submissions, key=lambda s: (s.created_at, s.pk)):
        reviews = sorted(submission.reviews.all(), key=lambda r: (r.created_at, r.pk))
        if reviews and reviews[-1].decision == ReviewDecision.ACCEPTED:
            counted[submission.issue_id] = (submission, reviews[-1])
    return sorted(counted.values(), key=lambda pair: (pair[0].issue.created_at, pair[0].issue.code))


def issue_sample(issue):
    """The issue's dataset sample: its latest submission whose latest review accepts it, or None."""
    sample = None
    for submission in issue.submissions.filter(mode=SubmissionMode.RANKED).prefetch_related("reviews").order_by("created_at", "pk"):
        reviews = sorted(submission.reviews.all(), key=lambda r: (r.created_at, r.pk))
        if reviews and reviews[-1].decision == ReviewDecision.ACCEPTED:
            sample = submission
    return sample


def sample_weight(issue):
    """The weight the season's rule gives the issue's sample (submissions/rules/weights.py)."""
    return weights.rule_of(issue.season).weight_for(issue)


def published_exports(season):
    """The season's dataset exports published for everyone (services/datasets.publish), newest first."""
    return season.dataset_exports.filter(published_at__isnull=False).order_by("-number")
