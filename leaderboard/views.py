"""Public pages: home, seasons and their leaderboards."""
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from leaderboard import selectors
from submissions.models import Season

PAGE_SIZE = 50


def home(request):
    season = selectors.current_season()
    top = selectors.season_standings(season, limit=10) if season else []
    return render(request, "leaderboard/home.html", {
        "season": season, "top": top, "seasons": Season.objects.all(),
        "rule": selectors.rule_of(season) if season else None,
    })


def season_detail(request, code):
    season = get_object_or_404(Season, code=code)
    return render(request, "leaderboard/season_detail.html", {
        "season": season, "issues": selectors.season_issues(season), "gpu_types": season.gpu_types.all(),
    })


def season_leaderboard(request, code):
    season = get_object_or_404(Season, code=code)
    paginator = Paginator(season.standings.select_related("contestant").order_by("rank", "contestant_id"), PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    return render(request, "leaderboard/leaderboard.html", {
        "season": season, "page": page, "rule": selectors.rule_of(season),
    })
