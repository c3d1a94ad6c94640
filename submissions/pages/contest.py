"""Contestant pages: issues, submissions (with live run status), uploading."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from submissions import case_figures, fleet_status, freeze_reads, hardware_reads, run_limits, selectors
from submissions.bundles import BundleError, bundle_from_uploads
from submissions.models import Issue, Run, RunStatus
from submissions.pages.forms import IssueFilterForm, IssueForm, SubmitForm
from submissions.rules import ranked_runs, timing_flags
from submissions.search import notify_cut
from submissions.services import accounts, cancelling, submitting


def issue_list(request):
    form = IssueFilterForm(request.GET or None)
    if form.search_cut:
        notify_cut(request)
    filters = form.cleaned_data if form.is_valid() else {}
    author = None
    if filters.get("mine") and request.user.is_authenticated:
        author = accounts.contestant_for(request.user)
    issues = selectors.search_issues(q=filters.get("q", ""), season=filters.get("season"),
                                     framework=filters.get("framework", ""), level=filters.get("level"), author=author)
    return render(request, "submissions/issue_list.html",
                  {"form": form, "issues": selectors.with_best_speedups(list(issues[:200]), request.user),
                   # the season searched, else those taking submissions: their start, end and countdown
                   "clock_seasons": [filters["season"]] if filters.get("season") else selectors.open_seasons()})


@login_required
def open_issue(request):
    contestant = accounts.contestant_for(request.user)
    form = IssueForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            issue = submitting.open_issue(data["season"], contestant, title=data["title"], operator=data["operator"],
                                          framework=data["framework"], level=data["level"],
                                          description=data["description"])
        except submitting.SubmissionRefused as exc:
            form.add_error(None, str(exc))
            status = 429 if isinstance(exc, submitting.TooManyRequests) else 200
        else:
            messages.success(request, _("Issue %(issue)s opened: submit the folder %(folder)s/.")
                             % {"issue": issue.code, "folder": f"{issue.season.code}/{issue.code}"})
            return redirect("issue_detail", code=issue.code)
    return render(request, "submissions/issue_new.html", {"form": form}, status=status)


def issue_detail(request, code):
    issue = get_object_or_404(Issue.objects.select_related("season", "author"), code=code.upper())
    is_author = request.user.is_authenticated and issue.author.user_id == request.user.pk
    sample = selectors.issue_sample(issue)
    history = selectors.issue_history(issue, request.user)
    return render(request, "submissions/issue_detail.html", {
        "issue": issue, "submissions": history,
        # the link to the comparison of one's own versions, for whoever has some here
        "has_own_versions": any(selectors.is_own(request.user, s) for s in history),
        # the dataset's sample of this issue and its weight (submissions/rules/weights.py)
        "sample": sample, "weight": selectors.sample_weight(issue) if sample else None,
        # an issue's author submits to it, anyone to a published problem; a visitor is asked to sign in first
        "can_submit": issue.season.is_open and (is_author or bool(issue.fixed_reference)
                                                or not request.user.is_authenticated),
    })


def _run_rows(submission, online, show_provisional=False, owner=False, hidden=frozenset()):
    """The runs table's rows; a run in `hidden` (freeze_reads.as_shown) shows no result, and the ranked
    figures are those of the other runs."""
    ranked = ranked_runs.by_gpu_type([run for run in submission.runs.all() if run.pk not in hidden])
    rows = []
    now = timezone.now()
    for run in selectors.latest_runs_with_confirmed(submission):
        rows.append({"run": run, **selectors.run_progress(run, now),
                     "not_profiled_on_cpu": timing_flags.not_profiled_on_cpu(run),
                     "ranked": ranked.get(run.gpu_type_id), "spread": timing_flags.spread_percent(run.result),
                     "cases": case_figures.case_rows(run.result),  # a problem judged on several input cases
                     # finished after its season's scoreboard froze: the result is revealed at the thaw
                     "hidden": run.pk in hidden,
                     # a figure one host vouches for alone: its owner and organizers see it, marked
                     "provisional": timing_flags.is_provisional(run),
                     "withheld": timing_flags.is_provisional(run) and not show_provisional,
                     # it waits for an agent rather than being judged elsewhere
                     "no_agent_online": run.status in (RunStatus.QUEUED, RunStatus.WAITING)
                     and not online.get(run.gpu_type_id),
                     # the viewer's own run no agent has started: a cancel button beside it
                     "can_cancel": owner and cancelling.own_cancellable(run)})
    return rows


def _submission_context(request, submission_id):
    submission = selectors.submission_with_runs(submission_id)
    if submission is None or not selectors.can_see_submission(request.user, submission):
        raise Http404("no such submission")  # a test or benchmark submission: its owner's and the organizers'
    online = fleet_status.workers_online()
    can_see_code = selectors.can_see_code(request.user, submission)
    held = freeze_reads.Viewer(request.user)
    since = held.submission_held_since(submission)
    hidden = freeze_reads.as_shown(submission.runs.all(), since)
    return {
        "submission": submission, "held_since": since,
        "hardware": hardware_reads.submission_hardware(submission, online, show_code=can_see_code),
        "run_rows": _run_rows(submission, online, selectors.can_see_provisional(request.user, submission),
                              owner=selectors.is_own(request.user, submission), hidden=hidden),
        # the charts draw what the runs table shows
        "chart_runs": [run for run in submission.runs.all() if run.pk not in hidden],
        "can_see_code": can_see_code,
        "state": selectors.visible_state(request.user, submission, held),
        "live": selectors.has_unfinished_runs(submission),
        "limits": run_limits.limits(),
    }


def submission_detail(request, submission_id):
    context = _submission_context(request, submission_id)
    # those made by the freeze the viewer is held to (freeze_reads): a later decision is told at the thaw
    context["reviews"] = freeze_reads.reviews_shown(context["submission"].reviews.order_by("-created_at", "-pk"),
                                                    context["held_since"])
    if selectors.is_organizer(request.user):
        # Organizers see the flags and the audit trail here too (never editable).
        submission = context["submission"]
        context["flags"] = submission.abuse_flags.select_related("other_submission")
        context["audit"] = selectors.audit_for_submission(submission)
    return render(request, "submissions/submission_detail.html", context)


@login_required
@require_POST
def cancel_own_run(request, run_id):
    """The contestant cancels a run of theirs no agent has started (audited; a reason is optional)."""
    run = get_object_or_404(Run.objects.only("pk", "submission_id"), pk=run_id)
    try:
        cancelling.cancel_own_run(run.pk, request.user, request.POST.get("reason", ""))
    except cancelling.CancelRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Run #%(id)s is cancelled.") % {"id": run.pk})
    return redirect("submission_detail", submission_id=run.submission_id)


def submission_runs_fragment(request, submission_id):
    """The runs table alone; the submission page polls it while runs are unfinished."""
    return render(request, "submissions/_runs.html", _submission_context(request, submission_id))


@login_required
def submit(request):
    contestant = accounts.contestant_for(request.user)
    # "Submit to this issue" on an issue page preselects it (when it is one of the contestant's own)
    preselected = submitting.issues_open_to(contestant).filter(code=request.GET.get("issue", "").strip().upper()).first()
    form = SubmitForm(request.POST or None, request.FILES or None, contestant=contestant,
                      initial={"issue": preselected} if preselected else None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            chosen = form.cleaned_data["issue"]  # a new issue has no fixed reference yet
            bundle = bundle_from_uploads(form.cleaned_data["files"], chosen.fixed_reference if chosen else "",
                                         chosen.code if chosen else "")
            with transaction.atomic():
                issue = form.cleaned_data["issue"] or submitting.open_issue(
                    form.cleaned_data["season"], contestant, title=form.cleaned_data["new_issue_title"],
                    operator=form.cleaned_data["new_issue_operator"],
                    framework=form.cleaned_data["new_issue_framework"] or "pytorch",
                )
                submission = submitting.create_submission(contestant, issue, bundle, note=form.cleaned_data["note"],
                                                          mode=form.cleaned_data["mode"])
        except BundleError as exc:
            for error in exc.errors:
                form.add_error("files", error)
        except submitting.SubmissionRefused as exc:
            form.add_error(None, str(exc))
            status = 429 if isinstance(exc, submitting.TooManyRequests) else 200
        else:
            # "judging": the page's script removes it once every run has its verdict. It names no state:
            # the runs table follows theirs ("queued" stood above a run compiling).
            messages.success(request, _("Submission #%(id)s for %(issue)s is in: its runs below show how far "
                                        "judging has come.")
                             % {"id": submission.pk, "issue": issue.code}, extra_tags="judging")
            return redirect("submission_detail", submission_id=submission.pk)
    return render(request, "submissions/submit.html",
                  {"form": form, "seasons_hardware": hardware_reads.open_seasons_hardware(contestant)}, status=status)
