"""The organizer's dataset page: a season's samples with their weights and the numbered exports (staff
only; the work is in services/weighting.py and services/datasets.py). The weight rule itself is chosen
on the season settings page (pages/season_settings.py)."""
from django.contrib import messages
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from submissions import dataset_export, selectors
from submissions.models import DatasetExport, Issue, Season
from submissions.pages.organizer import organizer_required
from submissions.rules import ranked_runs, weights
from submissions.services import datasets, weighting


def _page(request, season):
    rule = weights.rule_of(season)
    samples = []
    for submission, review in selectors.accepted_samples(season):
        ranked = ranked_runs.by_gpu_type(submission.runs.all())
        slugs = {run.gpu_type_id: run.gpu_type.slug for run in submission.runs.all()}
        judged = dataset_export.verdicts(submission)
        samples.append({"submission": submission, "issue": submission.issue, "review": review,
                        "weight": rule.weight_for(submission.issue), "judged": judged,
                        "left_out": dataset_export.not_passed(judged),
                        "ranked": sorted(((slugs[g], f) for g, f in ranked.items()), key=lambda item: item[0])})
    exports = list(season.dataset_exports.select_related("created_by"))
    for export in exports:
        same = datasets.identical_to(export)
        export.same_as = same.number if same else None
        export.held_by_freeze = datasets.held_by_freeze(export)
    return render(request, "organizer/dataset.html", {
        "season": season, "rule": rule, "samples": samples, "exports": exports})


@organizer_required
def dataset_page(request, code):
    return _page(request, get_object_or_404(Season, code=code))


@organizer_required
@require_POST
def export_dataset(request, code):
    season = get_object_or_404(Season, code=code)
    include = request.POST.get("include", "").replace(",", " ").split()
    try:
        export = datasets.export_season(season, actor=request.user, reason=request.POST.get("reason", ""),
                                        include=include)
    except dataset_export.DatasetExportError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Dataset export %(number)s of %(season)s: %(count)s samples.")
                         % {"number": export.number, "season": season.code, "count": export.sample_count})
        if export.left_out:
            messages.warning(request, _("Left out, their runs did not pass: %(samples)s. Name them under "
                                        "\"include\" to export them anyway.")
                             % {"samples": "; ".join(f"{e['sample']} ({e['why']})" for e in export.left_out)})
    return redirect("organizer_dataset", code=season.code)


@organizer_required
@require_POST
def change_sample_weight(request, code):
    issue = get_object_or_404(Issue.objects.select_related("season"), code=code.upper())
    try:
        weight = weighting.parse_weight(request.POST.get("weight", ""))
        weighting.set_sample_weight(issue, weight, actor=request.user, reason=request.POST.get("reason", ""))
    except weights.WeightSettingsError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("The weight of %(issue)s is saved.") % {"issue": issue.code})
    return redirect("organizer_dataset", code=issue.season.code)


@organizer_required
def download_export(request, code, number):
    export = get_object_or_404(DatasetExport.objects.select_related("season"), season__code=code, number=number)
    path = datasets.archive_path(export)
    if not path.exists():
        raise Http404(_("the files of %(export)s are missing on the server") % {"export": export.name})
    return FileResponse(open(path, "rb"), as_attachment=True, filename=f"{export.name}.tar.gz",
                        content_type="application/gzip")


@organizer_required
@require_POST
def publish_export(request, code, number):
    export = get_object_or_404(DatasetExport.objects.select_related("season"), season__code=code, number=number)
    try:
        done = datasets.publish(export, actor=request.user, reason=request.POST.get("reason", ""))
    except datasets.PublishError as exc:
        messages.error(request, str(exc))
    else:
        if done:
            messages.success(request, _("%(export)s is published: everyone can download it from the season's "
                                        "dataset page.") % {"export": export.name})
        else:
            messages.info(request, _("%(export)s was already published.") % {"export": export.name})
    return redirect("organizer_dataset", code=code)


def season_dataset(request, code):
    """The season's published datasets, for everyone."""
    season = get_object_or_404(Season, code=code)
    return render(request, "submissions/season_dataset.html",
                  {"season": season, "exports": list(selectors.published_exports(season))})


def download_published(request, code, number):
    export = get_object_or_404(DatasetExport.objects.select_related("season"), season__code=code, number=number,
                               published_at__isnull=False)
    path = datasets.archive_path(export)
    if not path.exists():
        raise Http404(_("the files of %(export)s are missing on the server") % {"export": export.name})
    return FileResponse(open(path, "rb"), as_attachment=True, filename=f"{export.name}.tar.gz",
                        content_type="application/gzip")
