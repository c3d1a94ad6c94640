"""Public pages: home, seasons, leaderboards, hardware comparison, contestants."""
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.views import defaults

from leaderboard import charts, selectors
from submissions.models import Season, Submission

PAGE_SIZE = 50


def home(request):
    season = selectors.current_season()
    top = selectors.season_standings(season, limit=10, viewer=request.user) if season else []
    return render(request, "leaderboard/home.html", {
        "season": season, "top": top, "seasons": Season.objects.all(),
        "rule": selectors.rule_of(season) if season else None,
    })


def season_detail(request, code):
    season = get_object_or_404(Season, code=code)
    gpu_types, rows = selectors.hardware_comparison(season)
    figures = {
        "accepted": charts.accepted_over_time(rows),
        "speedups": charts.speedup_distribution(selectors.passed_speedups(season)),
    }
    return render(request, "leaderboard/season_detail.html", {
        "season": season, "issues": selectors.season_issues(season), "gpu_types": gpu_types,
        "figures": {k: f for k, f in figures.items() if f["data"] and any(d.get("x") for d in f["data"])},
    })


def season_leaderboard(request, code):
    season = get_object_or_404(Season, code=code)
    search = request.GET.get("q", "").strip()
    paginator = selectors.BoardPaginator(selectors.standings_query(season, search, request.user), PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    context = {"season": season, "page": page, "rule": selectors.rule_of(season), "search": search,
               "gpu_types": season.gpu_types.order_by("slug"),
               "freeze": selectors.active_freeze(season, request.user),
               "live_freeze": selectors.active_freeze(season) if request.user.is_staff else None}
    if request.GET.get("fragment"):
        # The page polls this to update the table while runs finish and reviews land.
        return render(request, "leaderboard/_leaderboard_table.html", context)
    return render(request, "leaderboard/leaderboard.html", context)


def hardware_comparison(request, code):
    season = get_object_or_404(Season, code=code)
    gpu_types, rows = selectors.hardware_comparison(season)
    return render(request, "leaderboard/hardware.html", {
        "season": season, "gpu_types": gpu_types, "rows": rows,
        "figures": {"matrix": charts.hardware_matrix(gpu_types, rows)} if rows else {},
    })


def contestant_detail(request, contestant_id):
    contestant = selectors.public_contestant(contestant_id)
    if contestant is None:
        raise Http404("no such contestant")
    return render(request, "leaderboard/contestant.html", selectors.contestant_profile(contestant))


def gpu_leaderboard(request, code, slug):
    season = get_object_or_404(Season, code=code)
    gpu_type = selectors.season_gpu_type(season, slug)
    if gpu_type is None:
        raise Http404("this season is not judged on that GPU type")
    search = request.GET.get("q", "").strip()
    page = selectors.BoardPaginator(selectors.gpu_standings_query(season, gpu_type, search),
                                    PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "leaderboard/gpu_leaderboard.html", {
        "season": season, "gpu_type": gpu_type, "gpu_types": season.gpu_types.order_by("slug"), "page": page,
        "search": search,
    })


def submission_charts(request, submission_id):
    """A submission's charts alone: its page fetches them when the last verdict arrives."""
    submission = get_object_or_404(Submission, pk=submission_id)
    return render(request, "leaderboard/_submission_charts.html",
                  charts.submission_figures(submission, selectors.judged_runs(submission)))


def server_error(request):
    """The 500 page with the request's context (who is logged in, the language switch's CSRF token);
    without it when rendering with it fails too, for that may be what broke."""
    try:
        return render(request, "500.html", status=500)
    except Exception:
        return defaults.server_error(request)
