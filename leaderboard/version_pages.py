"""The comparison of one's own versions of an issue: a table and a chart of each submission's speedup
per GPU type (only the signed-in contestant's own submissions)."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from leaderboard import charts
from submissions import version_comparison
from submissions.models import Issue


@login_required
def own_versions(request, code):
    issue = get_object_or_404(Issue.objects.select_related("season", "author"), code=code.upper())
    comparison = version_comparison.own_versions(issue, request.user)
    has_figures = any(cell and cell.speedup for row in comparison["rows"] for cell in row["cells"])
    return render(request, "submissions/versions.html", {
        "issue": issue, **comparison,
        "figures": {"versions": charts.speedup_by_version(comparison["gpu_types"], comparison["rows"])}
        if has_figures else {},
    })
