"""Profile reports in the browser (services/profiles.py): "Profile this run" on a passed run of one's own,
a profile run's page (a table per kernel and the roofline chart) and its .ncu-rep, for its owner and the
organizers alone (anyone else: 404, as for a test or benchmark submission)."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from submissions import profile_reports
from submissions.models import ProfileFile, Run, SubmissionMode, SubmissionSource
from submissions.services import profiles, submitting


@login_required
@require_POST
def request_profile(request, run_id):
    """A profile submission of the contestant's passed run, then its page; a refusal is told on the run's."""
    run = get_object_or_404(Run.objects.only("pk", "submission_id"), pk=run_id)
    try:
        submission = profiles.request_profile(run.pk, request.user, source=SubmissionSource.UPLOAD)
    except (profiles.NotYours, profiles.ProfileRefused, submitting.SubmissionRefused) as exc:
        messages.error(request, str(exc))
        return redirect("submission_detail", submission_id=run.submission_id)
    messages.success(request, _("Profile #%(id)s of run #%(run)s is queued: its report appears on its run's profile "
                                "page once the run is judged.") % {"id": submission.pk, "run": run.pk},
                     extra_tags="judging")
    return redirect("submission_detail", submission_id=submission.pk)


def _profile_run(request, run_id):
    run = get_object_or_404(Run.objects.select_related("submission__issue__season", "submission__contestant",
                                                       "gpu_type"), pk=run_id)
    if run.submission.mode != SubmissionMode.PROFILE or not profiles.can_see_profile(request.user, run):
        raise Http404(_("run %(id)s is no profile run of yours") % {"id": run_id})
    return run


def _shown_kernels(report):
    """The report's kernels with what the table shows besides: microseconds and GFLOP/s."""
    for kernel in report["kernels"]:
        kernel["duration_us"] = kernel["duration_ms"] * 1e3 if kernel["duration_ms"] is not None else None
        kernel["gflop_per_s"] = kernel["flop_per_s"] / 1e9 if kernel["flop_per_s"] is not None else None
    return report["kernels"]


def profile_page(request, run_id):
    run = _profile_run(request, run_id)
    report = profile_reports.with_stored_file(profile_reports.report(run), profiles.stored_file(run))
    peak_gbps, peak_tflops = profile_reports.device_peaks(run)
    return render(request, "submissions/profile.html", {
        "run": run, "submission": run.submission, "report": report,
        "kernels": _shown_kernels(report) if report else [],
        "models": [(model, (report or {}).get("models", {}).get(model)) for model in profile_reports.MODELS],
        "peak_gbps": peak_gbps, "peak_tflops": peak_tflops,
    })


def profile_file(request, run_id):
    run = _profile_run(request, run_id)
    stored = ProfileFile.objects.filter(run_id=run.pk).first()
    if stored is None:
        raise Http404(_("run %(id)s has no profiler report file") % {"id": run_id})
    return profile_reports.ncu_rep_download(run, stored)
