"""Contestant pages: issues, submissions (with live run status), uploading."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _

from submissions import fleet_status, selectors
from submissions.bundles import BundleError, bundle_from_uploads
from submissions.models import Issue, RunStatus
from submissions.pages.forms import IssueFilterForm, IssueForm, SubmitForm
from submissions.rules import ranked_runs, timing_flags
from submissions.search import notify_cut
from submissions.services import accounts, submitting


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
                  {"form": form, "issues": selectors.with_best_speedups(list(issues[:200]))})


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
    return render(request, "submissions/issue_detail.html", {
        "issue": issue, "submissions": selectors.issue_history(issue, request.user),
        # the dataset's sample of this issue and its weight (submissions/rules/weights.py)
        "sample": sample, "weight": selectors.sample_weight(issue) if sample else None,
        # only an issue's author submits to it; a visitor is asked to sign in first
        "can_submit": issue.season.is_open and (is_author or not request.user.is_authenticated),
    })


def _run_rows(submission, online, show_provisional=False):
    ranked = ranked_runs.by_gpu_type(submission.runs.all())
    rows = []
    now = timezone.now()
    for run in selectors.latest_runs_with_confirmed(submission):
        rows.append({"run": run, **selectors.run_progress(run, now),
                     "not_profiled_on_cpu": timing_flags.not_profiled_on_cpu(run),
                     "ranked": ranked.get(run.gpu_type_id), "spread": timing_flags.spread_percent(run.result),
                     # a figure one host vouches for alone: its owner and organizers see it, marked
                     "provisional": timing_flags.is_provisional(run),
                     "withheld": timing_flags.is_provisional(run) and not show_provisional,
                     # it waits for an agent rather than being judged elsewhere
                     "no_agent_online": run.status in (RunStatus.QUEUED, RunStatus.WAITING)
                     and not online.get(run.gpu_type_id)})
    return rows


def _submission_context(request, submission_id):
    submission = selectors.submission_with_runs(submission_id)
    if submission is None:
        raise Http404("no such submission")
    online = fleet_status.workers_online()
    can_see_code = selectors.can_see_code(request.user, submission)
    return {
        "submission": submission,
        "hardware": selectors.submission_hardware(submission, online, show_code=can_see_code),
        "run_rows": _run_rows(submission, online, selectors.can_see_provisional(request.user, submission)),
        "can_see_code": can_see_code,
        "state": selectors.visible_state(request.user, submission),
        "live": selectors.has_unfinished_runs(submission),
    }


def submission_detail(request, submission_id):
    context = _submission_context(request, submission_id)
    context["reviews"] = context["submission"].reviews.order_by("-created_at", "-pk")
    if selectors.is_organizer(request.user):
        # Organizers see the flags and the audit trail here too (never editable).
        submission = context["submission"]
        context["flags"] = submission.abuse_flags.select_related("other_submission")
        context["audit"] = selectors.audit_for_submission(submission)
    return render(request, "submissions/submission_detail.html", context)


def submission_runs_fragment(request, submission_id):
    """The runs table alone; the submission page polls it while runs are unfinished."""
    return render(request, "submissions/_runs.html", _submission_context(request, submission_id))


@login_required
def submit(request):
    contestant = accounts.contestant_for(request.user)
    # "Submit to this issue" on an issue page preselects it (when it is one of the contestant's own)
    preselected = Issue.objects.filter(code=request.GET.get("issue", "").strip().upper(), author=contestant,
                                       season__is_open=True).first()
    form = SubmitForm(request.POST or None, request.FILES or None, contestant=contestant,
                      initial={"issue": preselected} if preselected else None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            bundle = bundle_from_uploads(form.cleaned_data["files"])
            with transaction.atomic():
                issue = form.cleaned_data["issue"] or submitting.open_issue(
                    form.cleaned_data["season"], contestant, title=form.cleaned_data["new_issue_title"],
                    operator=form.cleaned_data["new_issue_operator"],
                    framework=form.cleaned_data["new_issue_framework"] or "pytorch",
                )
                submission = submitting.create_submission(contestant, issue, bundle, note=form.cleaned_data["note"])
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
                  {"form": form, "seasons_hardware": selectors.open_seasons_hardware(contestant)}, status=status)
