"""The organizer console: review queue, review page, rejudges and CSV exports (staff only)."""
from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.formats import number_format
from django.utils.translation import gettext as _, ngettext
from django.views.decorators.http import require_POST

from submissions import exports, fleet_status, highlighting, selectors
from submissions.bundles import CANDIDATE_NAMES, REFERENCE_NAMES
from submissions.models import AgentWorker, Issue, Rejudge, RejudgeScope, Run, RunStatus, Season
from submissions.rules import ranked_runs, rubrics, timing_flags
from submissions.services import cancelling, clearing, fleet, rejudging, reviewing


def organizer_required(view):
    """Anonymous visitors go to the login page; logged-in contestants get 403."""
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not selectors.is_organizer(request.user):
            raise PermissionDenied(_("organizers only"))
        return view(request, *args, **kwargs)
    return wrapper


def _season_filter(request):
    code = request.GET.get("season", "").strip()
    return get_object_or_404(Season, code=code) if code else None


@organizer_required
def review_queue(request):
    season = _season_filter(request)
    include_reviewed = request.GET.get("all") == "1"
    flagged_only = request.GET.get("flagged") == "1"
    rows = selectors.review_queue_rows(
        selectors.review_queue(include_reviewed=include_reviewed, season=season, flagged_only=flagged_only)[:200])
    return render(request, "organizer/queue.html", {
        "rows": rows, "season": season, "include_reviewed": include_reviewed, "flagged_only": flagged_only,
        "seasons": Season.objects.order_by("-starts_at"), "rejudges": Rejudge.objects.all()[:10],
    })


def _side_by_side(files):
    reference = next((n for n in REFERENCE_NAMES if n in files), None)
    candidate = next((n for n in CANDIDATE_NAMES if n in files), None)
    pair = [(name, highlighting.highlighted(name, files[name])) for name in (reference, candidate) if name]
    others = [(path, highlighting.highlighted(path, text)) for path, text in sorted(files.items())
              if path not in (reference, candidate)]
    return pair, others


def _review_context(request, submission, *, form_values=None, error=""):
    files = {f.path: f.content for f in submission.files.all()}
    pair, others = _side_by_side(files)
    rubric = rubrics.rubric_of(submission.issue.season)
    prefill = reviewing.prefill(submission)
    values = form_values or {}
    latest = selectors.latest_review(submission)
    current = latest.rubric if latest and latest.rubric else prefill
    items = [{"item": item, "prefill": prefill.get(item.key, 0.0),
              "value": values.get(item.key, current.get(item.key, prefill.get(item.key, 0.0)))}
             for item in rubric.items]
    ranked = ranked_runs.by_gpu_type(submission.runs.all())
    runs = selectors.latest_runs(submission)
    return {
        "submission": submission, "pair": pair, "others": others, "highlight_css": highlighting.stylesheet(),
        "runs": runs, "all_runs": submission.runs.all(),
        "run_rows": [{"run": run, "ranked": ranked.get(run.gpu_type_id)}
                     for run in selectors.latest_runs_with_confirmed(submission)],
        "blockers": reviewing.acceptance_blockers(submission),
        "flags": submission.abuse_flags.select_related("other_submission__issue", "other_submission__contestant"),
        "similar": selectors.similar_submissions(submission), "rubric": rubric, "items": items,
        "reviews": submission.reviews.select_related("reviewer"), "latest_review": latest,
        "audit": selectors.audit_for_submission(submission), "error": error,
        "posted": request.POST if request.method == "POST" else {},
    }


def _submission_or_404(submission_id):
    submission = selectors.submission_with_runs(submission_id)
    if submission is None:
        raise Http404("no such submission")
    return submission


@organizer_required
def review_page(request, submission_id):
    submission = _submission_or_404(submission_id)
    return render(request, "organizer/review.html", _review_context(request, submission))


@organizer_required
@require_POST
def review_submit(request, submission_id):
    submission = _submission_or_404(submission_id)
    rubric = rubrics.rubric_of(submission.issue.season)
    points = {item.key: request.POST.get(f"points_{item.key}", "") for item in rubric.items}
    try:
        review = reviewing.review_submission(
            submission, request.user, request.POST.get("decision", ""), reason=request.POST.get("reason", ""),
            rubric=points, override_reason=request.POST.get("override_reason", ""),
            acceptance_override=request.POST.get("acceptance_override", ""))
    except reviewing.ReviewRefused as exc:
        context = _review_context(request, submission, form_values=points, error=str(exc))
        return render(request, "organizer/review.html", context, status=400)
    messages.success(request, _("Submission #%(id)s %(decision)s: base %(base)s, bonus %(bonus)s.") % {
        "id": submission.pk, "decision": review.get_decision_display(),
        "base": number_format(review.base_score), "bonus": number_format(review.bonus)})
    return redirect("organizer_review", submission_id=submission.pk)


def _act_on_run(request, run_id, action, refused, done_message):
    """An organizer's audited action on a run with the posted reason; the outcome as a flash message."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        action(run.pk, request.user, request.POST.get("reason", ""))
    except refused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done_message % {"id": run.pk})
    return run


def _clear(request, run_id, action, form, has_form, done_message):
    """Clear a run's flag with the posted reason; a refusal stands next to that run's form (`form`, on the
    page while `has_form(run)`), which keeps the reason typed."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        action(run.pk, request.user, request.POST.get("reason", ""))
    except clearing.ClearingRefused as exc:
        if not has_form(run):  # nothing to clear: the page has no form to stand next to
            messages.error(request, str(exc))
            return redirect("organizer_review", submission_id=run.submission_id)
        context = _review_context(request, _submission_or_404(run.submission_id))
        # the review form below keeps its own fields empty: the reason typed belongs to this run's form
        context.update(clear_form=form, clear_run=run.pk, clear_error=str(exc), posted={},
                       clear_reason=request.POST.get("reason", ""))
        return render(request, "organizer/review.html", context, status=400)
    messages.success(request, done_message % {"id": run.pk})
    return redirect("organizer_review", submission_id=run.submission_id)


@organizer_required
@require_POST
def clear_run_timing(request, run_id):
    """Let a run whose time the agent could not confirm count in the standings (audited)."""
    return _clear(request, run_id, clearing.clear_timing, "timing", timing_flags.awaits_clearance,
                  _("The time of run #%(id)s is cleared: it counts in the standings."))


@organizer_required
@require_POST
def clear_run_second_judging(request, run_id):
    """Let a provisional figure (awaiting a second judging, or contradicted by one) count (audited)."""
    return _clear(request, run_id, clearing.clear_second_judging, "second", timing_flags.is_provisional,
                  _("The figure of run #%(id)s is cleared: it counts in the standings."))


@organizer_required
@require_POST
def cancel_run(request, run_id):
    """Cancel a queued, waiting or running run (audited with the reason); back to where the button was.
    A running run's agent stops judging it at its next heartbeat."""
    running = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).exists()
    done = (_("Run #%(id)s is cancelled; its agent is told to stop judging it at its next heartbeat.") if running
            else _("Run #%(id)s is cancelled."))
    run = _act_on_run(request, run_id, cancelling.cancel_run, cancelling.CancelRefused, done)
    back = request.POST.get("back")
    if run.rejudge_id and back == "rejudge":
        return redirect("organizer_rejudge", rejudge_id=run.rejudge_id)
    if back == "fleet":
        return redirect("organizer_fleet")
    return redirect("organizer_review", submission_id=run.submission_id)


def _rejudge(request, scope, target, back):
    try:
        batch = rejudging.rejudge(scope, target, request.user, request.POST.get("reason", ""))
    except rejudging.RejudgeRefused as exc:
        messages.error(request, str(exc))
        return redirect(back)
    if batch.already_queued:
        messages.info(request, _("Nothing new was queued: the runs of rejudge #%(id)s (%(scope)s %(target)s) have "
                                 "not started yet.") % {"id": batch.pk, "scope": batch.get_scope_display(),
                                                        "target": batch.target})
        return redirect("organizer_rejudge", rejudge_id=batch.pk)
    done, total = rejudging.progress(batch)
    messages.success(request, ngettext("Rejudge of %(scope)s %(target)s: %(count)s new run queued.",
                                       "Rejudge of %(scope)s %(target)s: %(count)s new runs queued.", total)
                     % {"scope": batch.get_scope_display(), "target": batch.target, "count": total})
    return redirect("organizer_rejudge", rejudge_id=batch.pk)


@organizer_required
@require_POST
def rejudge_submission(request, submission_id):
    submission = _submission_or_404(submission_id)
    return _rejudge(request, RejudgeScope.SUBMISSION, submission, f"/organizer/submissions/{submission.pk}/")


@organizer_required
@require_POST
def rejudge_issue(request, code):
    issue = get_object_or_404(Issue, code=code.upper())
    return _rejudge(request, RejudgeScope.ISSUE, issue, "organizer_queue")


@organizer_required
@require_POST
def rejudge_season(request, code):
    season = get_object_or_404(Season, code=code)
    return _rejudge(request, RejudgeScope.SEASON, season, "organizer_queue")


@organizer_required
def rejudge_progress(request, rejudge_id):
    batch = get_object_or_404(Rejudge, pk=rejudge_id)
    done, total = rejudging.progress(batch)
    runs = batch.runs.select_related("gpu_type", "submission__issue").order_by("submission_id", "gpu_type__slug")
    return render(request, "organizer/rejudge.html", {"batch": batch, "done": done, "total": total, "runs": runs,
                                                      "live": done < total})


@organizer_required
def export_csv(request, kind):
    if kind not in exports.EXPORTS:
        raise Http404(f"no export named {kind}; exports: {', '.join(exports.EXPORTS)}")
    season = _season_filter(request)
    response = StreamingHttpResponse(exports.csv_lines(kind, season), content_type="text/csv; charset=utf-8")
    suffix = f"-{season.code}" if season else ""
    response["Content-Disposition"] = f'attachment; filename="{kind}{suffix}.csv"'
    return response


@organizer_required
def fleet_page(request):
    return render(request, "organizer/fleet.html", fleet_status.overview())


def _fleet_refused(request, worker, error):
    """The fleet page with `error` next to the worker's drain form, which keeps the reason typed."""
    context = {**fleet_status.overview(), "failed_worker": worker.pk, "error": error, "posted": request.POST}
    return render(request, "organizer/fleet.html", context, status=400)


@organizer_required
def fleet_json(request):
    """The fleet page's JSON twin (same data; whole GPU UUIDs, ISO times, ages in seconds)."""
    return JsonResponse(fleet_status.overview_json(fleet_status.overview()))


@organizer_required
@require_POST
def drain_worker(request, worker_id):
    """The worker finishes its current run and takes no more (audited with the reason)."""
    worker = get_object_or_404(AgentWorker.objects.select_related("agent"), pk=worker_id)
    reason = request.POST.get("reason", "").strip()
    if not reason:
        return _fleet_refused(request, worker, _("Say why %(worker)s is drained: the reason is kept in the audit "
                                                 "trail.") % {"worker": worker})
    try:
        drained = fleet.drain_worker(worker, actor=request.user, reason=reason)
    except fleet.DrainRefused as exc:
        return _fleet_refused(request, worker, str(exc))
    if drained:
        messages.success(request, _("%(worker)s is draining: it finishes its current run and takes no more.")
                         % {"worker": worker})
    else:
        messages.error(request, _("%(worker)s was already draining.") % {"worker": worker})
    return redirect("organizer_fleet")


@organizer_required
@require_POST
def resume_worker(request, worker_id):
    """The worker takes runs again from its next heartbeat (audited)."""
    worker = get_object_or_404(AgentWorker.objects.select_related("agent"), pk=worker_id)
    if fleet.resume_worker(worker, actor=request.user, reason=request.POST.get("reason", "").strip()):
        messages.success(request, _("%(worker)s takes runs again from its next heartbeat.") % {"worker": worker})
    else:
        messages.error(request, _("%(worker)s was not draining.") % {"worker": worker})
    return redirect("organizer_fleet")
