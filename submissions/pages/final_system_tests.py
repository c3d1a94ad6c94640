"""The organizers' final system test page of a season: start it (with a reason), follow its runs, and
compare the provisional standings with the final ones. The work is in services/final_system_tests.py."""
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from submissions import fleet_status
from submissions.models import FinalSystemTest, Season
from submissions.pages.organizer import organizer_required
from submissions.services import final_system_tests


@organizer_required
def final_test_page(request, code):
    return _page(request, get_object_or_404(Season, code=code))


def _page(request, season, *, error="", status=200):
    """The page; after a refusal, `error` stands next to the start form, which keeps the reason typed."""
    test = FinalSystemTest.objects.filter(season=season).select_related("rejudge", "started_by").first()
    # the GPU types whose online agents are too old to read the final queue: its runs would wait there
    context = {"season": season, "test": test, "error": error,
               "posted": request.POST if error else {},
               "unread_final_queues": fleet_status.reading_no_final_queue(season.gpu_types.order_by("slug"))}
    if test is not None:
        judged, total, failed = final_system_tests.progress(test)
        context.update(judged=judged, total=total, failed=failed, failed_runs=final_system_tests.failed_runs(test),
                       rows=final_system_tests.comparison(test))
    return render(request, "organizer/final_system_test.html", context, status=status)


@organizer_required
@require_POST
def start_final_test(request, code):
    season = get_object_or_404(Season, code=code)
    try:
        test = final_system_tests.start(season, request.POST.get("reason", ""), actor=request.user)
    except final_system_tests.FinalTestRefused as exc:
        return _page(request, season, error=str(exc), status=400)
    else:
        total = final_system_tests.progress(test)[1]
        messages.success(request, ngettext("The final system test of %(season)s has started: %(count)s run queued.",
                                           "The final system test of %(season)s has started: %(count)s runs queued.",
                                           total) % {"season": season.code, "count": total})
    return redirect("organizer_final_system_test", code=season.code)
