"""Public pages: home, seasons, leaderboards, hardware comparison, contestants."""
from django.core.paginator import EmptyPage, Page, PageNotAnInteger
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views import defaults

from leaderboard import board_cache, charts, selectors
from submissions.models import Season, Submission

PAGE_SIZE = 50
HOME_ROWS = 10


def home(request):
    season = selectors.current_season()
    top = None
    if season:
        rule = selectors.rule_of(season)
        freeze = selectors.active_freeze(season, request.user)
        top = mark_safe(board_cache.cached(season, (board_cache.board_of(freeze), "home"), lambda: render_to_string(
            "leaderboard/_standings.html",
            {"rows": selectors.rows_at(selectors.board_query(season, freeze), 0, HOME_ROWS), "rule": rule}),
            per_language=True))
    return render(request, "leaderboard/home.html", {"season": season, "top_table": top, "seasons": Season.objects.all()})


def cached_board_page(season, board, query, search, asked, render_rows):
    """The pager of `query`'s page `asked` (read as Paginator.get_page reads it: page 1 when it is no
    number, the last when it is past the end) and the page's rows as `render_rows(rows)` renders them,
    both from the board cache: a cached page reads no standings at all."""
    paginator = selectors.BoardPaginator(query, PAGE_SIZE)
    paginator.count = board_cache.cached(season, (board, search, "count"), query.count)
    try:
        number = paginator.validate_number(asked)
    except PageNotAnInteger:
        number = 1
    except EmptyPage:
        number = paginator.num_pages
    html = board_cache.cached(season, (board, search, "rows", number),
                              lambda: render_rows(paginator.page(number).object_list), per_language=True)
    return Page((), number, paginator), mark_safe(html)


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
    season = get_object_or_404(selectors.with_freeze(Season.objects), code=code)
    search = request.GET.get("q", "").strip()
    rule = selectors.rule_of(season)
    freeze = selectors.active_freeze(season, request.user)
    page, table = cached_board_page(
        season, board_cache.board_of(freeze), selectors.board_query(season, freeze, search), search,
        request.GET.get("page"),
        lambda rows: render_to_string("leaderboard/_standings.html", {"rows": rows, "rule": rule}))
    context = {"season": season, "page": page, "standings_table": table, "rule": rule, "search": search,
               "gpu_types": season.gpu_types.order_by("slug"), "freeze": freeze,
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
    page, table = cached_board_page(
        season, f"gpu-{gpu_type.pk}", selectors.gpu_standings_query(season, gpu_type, search), search,
        request.GET.get("page"), lambda rows: render_to_string("leaderboard/_gpu_standings.html", {"rows": rows}))
    return render(request, "leaderboard/gpu_leaderboard.html", {
        "season": season, "gpu_type": gpu_type, "gpu_types": season.gpu_types.order_by("slug"), "page": page,
        "standings_table": table, "search": search,
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
