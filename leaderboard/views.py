"""Public pages: home, seasons, leaderboards, hardware comparison, contestants."""
import functools

from django.contrib import messages
from django.core.paginator import EmptyPage, Page, PageNotAnInteger
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views import defaults

from leaderboard import board_cache, board_reads, charts, gpu_comparison, season_reads, selectors, standing_cells
from submissions import board_versions, season_access_reads
from submissions import selectors as submission_selectors
from submissions.models import Season, Submission
from submissions.search import SEARCH_MAX_CHARS, bounded_search, notify_cut
from submissions.templatetags.season_clocks import render_clock

PAGE_SIZE = 50
HOME_ROWS = 10


def home(request):
    seasons = season_reads.listed()  # the current one first
    season = season_reads.season_with_freeze(seasons[0].code) if seasons else None
    if season is None:
        return render(request, "leaderboard/home.html", {"season": None, "top_table": None, "seasons": seasons})
    rule = selectors.rule_of(season)
    freeze = selectors.active_freeze(season, request.user)

    def page(fresh):
        board = board_cache.board_of(freeze)
        top = mark_safe(board_cache.cached(season, (board, "home"), lambda: render_to_string(
            "leaderboard/_standings.html",
            {"rows": standing_cells.with_cells(board_reads.shown_rows(board, selectors.rows_at(
                selectors.board_query(season, freeze), 0, HOME_ROWS, whole_board=True)), rule), "rule": rule}),
            per_language=True, fresh=fresh, narrow=True))
        return render(request, "leaderboard/home.html", {"season": season, "top_table": top, "seasons": seasons})

    # what the page shows of the seasons is in the key: a season renamed or added is a new page
    return whole_page(request, season, (board_cache.board_of(freeze), "home-page", tuple(seasons)), page)



def cached_board_page(season, parts, make_query, search, asked, render_part, *, fresh=False):
    """The pager of the page `asked` (read as Paginator.get_page reads it: page 1 when it is no
    number, the last when it is past the end) of the board `make_query()` reads, and
    `render_part(page)`, the part of the answer that shows the page (its rows in `page.object_list`),
    both from the board cache: a cached page builds no query and reads no standings at all. `parts`
    name what is rendered, for whom (never who: no personal part). `fresh`: both at the season's
    version as read, never a rendering before it (board_cache.cached)."""
    paginator = selectors.BoardPaginator((), PAGE_SIZE)
    paginator.whole_board = not search
    if not search:
        paginator.read_rows = lambda query, offset, limit, whole_board: board_reads.shown_rows(parts[0], board_cache.per_version(
            season, (parts[0], "rows", offset, limit), lambda: selectors.rows_at(query, offset, limit,
                                                                                 whole_board=whole_board)))
    board = functools.cache(make_query)  # built on a miss only

    def count():
        # The live board shows every standing of the season: its count changes only with rows made or
        # removed (journal entries of "anything"). A GPU board shows the rows that passed there.
        if parts[0] != board_versions.LIVE:
            board_reads.depends_on(parts[0])
        return board().count()

    paginator.count = board_cache.cached(season, (parts[0], search, "count"), count, fresh=fresh, narrow=True)
    try:
        number = paginator.validate_number(asked)
    except PageNotAnInteger:
        number = 1
    except EmptyPage:
        number = paginator.num_pages

    def render():
        paginator.object_list = board()
        return render_part(paginator.page(number))

    # a search's matches are ranked on the whole board: any change may show
    html = board_cache.cached(season, (*parts, search, "page", number), render, per_language=True, fresh=fresh,
                              narrow=not search)
    return Page((), number, paginator), mark_safe(html)


def frozen_notices(season, viewer):
    """What a page of the season's figures (GPU boards, hardware comparison, charts) says of a freeze:
    `freeze`, the one `viewer` is shown (figures_freeze), and `live_freeze`, the one an organizer's
    live figures are hidden from the public by."""
    freeze = selectors.figures_freeze(season, viewer)
    return {"freeze": freeze, "live_freeze": selectors.figures_freeze(season) if viewer.is_staff else None}


def season_detail(request, code):
    season = get_object_or_404(selectors.with_freeze(Season.objects), code=code)
    notices = frozen_notices(season, request.user)
    gpu_types, rows = selectors.hardware_comparison(season, notices["freeze"])
    figures = {
        "accepted": charts.accepted_over_time(rows),
        "speedups": charts.speedup_distribution(selectors.passed_speedups(season, notices["freeze"])),
    }
    return render(request, "leaderboard/season_detail.html", {
        **notices, "season": season, "issues": selectors.season_issues(season), "gpu_types": gpu_types,
        "published_datasets": submission_selectors.published_exports(season).exists(),
        "access": season_access_reads.viewer_access(season, request.user),  # the viewer's own: ban, admission
        "figures": {k: f for k, f in figures.items() if f["data"] and any(d.get("x") for d in f["data"])},
    })


def season_leaderboard(request, code):
    season = season_reads.season_or_404(code)
    search, cut = bounded_search(request.GET.get("q"))
    freeze = selectors.active_freeze(season, request.user)
    staff = request.user.is_staff
    # ?fragment=1: the table alone, which the page polls to follow runs finishing and reviews landing
    fragment = bool(request.GET.get("fragment"))
    # live, provisional (ended, final system test not finished) or final: the season's end changes it
    # with no new board version, so it names the renderings
    status = season.standings_status
    if cut and not fragment:  # a fragment shows no messages: the notice would wait for the next page
        notify_cut(request)

    def render_part(page):
        rule = selectors.rule_of(season)
        context = {"season": season, "page": page, "rows": standing_cells.with_cells(page.object_list, rule),
                   "rule": rule, "search": search, "standings_status": status,
                   "search_max_chars": SEARCH_MAX_CHARS,
                   "gpu_types": season.gpu_types.order_by("slug"), "freeze": freeze,
                   "live_freeze": selectors.active_freeze(season) if staff else None}
        return render_to_string(
            "leaderboard/_leaderboard_table.html" if fragment else "leaderboard/_leaderboard_content.html", context)

    def content(fresh):
        # The board names whose rendering this is: during a freeze only organizers see the live one (with
        # their notice over it); the public sees the snapshot. Nothing else in the part depends on the viewer.
        _, part = cached_board_page(
            season, (board_cache.board_of(freeze), "table" if fragment else "page", status),
            lambda: selectors.board_query(season, freeze, search), search, request.GET.get("page"), render_part,
            fresh=fresh)
        return part

    if fragment:
        return HttpResponse(content(fresh=False))
    page = whole_page(request, season, (board_cache.board_of(freeze), "whole", status), lambda fresh: render(
        request, "leaderboard/leaderboard.html", {"season": season, "content": content(fresh)}))
    return with_season_clock(season, page)


# Where a board page's season clock goes: the page is kept for a board version, the clock is of this second.
SEASON_CLOCK_SLOT = b"<!--season-clock-->"


def with_season_clock(season, response):
    response.content = response.content.replace(SEASON_CLOCK_SLOT, render_clock(season).encode(), 1)
    return response


# What a board page's address may carry for its whole page to be kept: anything else (a tracking tag,
# a typo) would make an entry per address for the same page.
WHOLE_PAGE_PARAMETERS = {"page", "q"}


def whole_page(request, season, parts, render_page):
    """`render_page(fresh)`'s response. For a visitor who is not logged in and has no message waiting,
    the page's content is kept in the board cache under its address: such a visitor's page has nothing
    personal (no menu of their own, no CSRF token, no message), and rendering the page around its
    cached table cost as much as the rest of the request. A kept page is rendered from parts at the
    season's version (`fresh`), never around an older part: it is kept as that version's."""
    if (request.user.is_authenticated or len(messages.get_messages(request))
            or not set(request.GET) <= WHOLE_PAGE_PARAMETERS):
        return render_page(False)
    return HttpResponse(board_cache.cached(season, (*parts, request.get_full_path()),
                                           lambda: render_page(True).content, per_language=True, narrow=True))


def hardware_comparison(request, code):
    season = get_object_or_404(selectors.with_freeze(Season.objects), code=code)
    notices = frozen_notices(season, request.user)
    gpu_types, rows = selectors.hardware_comparison(season, notices["freeze"])
    comparison = gpu_comparison.gpu_comparison(season, request.GET.get("a"), request.GET.get("b"),
                                          hardware=(gpu_types, rows), freeze=notices["freeze"],
                                          site_url=request.build_absolute_uri("/").rstrip("/"))
    roofline = charts.gpu_roofline_position(comparison["gpus"])
    figures = {
        # none without a single speedup (a season benched offline: its GPUs are benchmark runs): an empty heatmap
        "matrix": ({"matrix": charts.hardware_matrix(gpu_types, rows)}
                   if any(cell and cell.speedup for row in rows for cell in row["cells"]) else {}),
        "ratios": {"ratios": charts.gpu_ratios(comparison)} if comparison["rows"] else {},
        "roofline": {"roofline": roofline} if roofline["data"] else {},
    }
    return render(request, "leaderboard/hardware.html", {
        **notices, "season": season, "gpu_types": gpu_types, "rows": rows, "comparison": comparison, "figures": figures,
        "charts": any(figures.values()),
    }, status=400 if comparison["error"] else 200)


def contestant_detail(request, contestant_id):
    contestant = selectors.public_contestant(contestant_id)
    if contestant is None:
        raise Http404("no such contestant")
    return render(request, "leaderboard/contestant.html", selectors.contestant_profile(contestant, request.user))


def gpu_leaderboard(request, code, slug):
    season = season_reads.season_or_404(code)
    gpu_type = selectors.season_gpu_type(season, slug)
    if gpu_type is None:
        raise Http404("this season is not judged on that GPU type")
    search, cut = bounded_search(request.GET.get("q"))
    if cut:
        notify_cut(request)
    notices = frozen_notices(season, request.user)
    # the public's rendering is of the freeze's snapshot of the board, the organizers' of the live one
    page, table = cached_board_page(
        season, (board_cache.gpu_board_of(notices["freeze"], gpu_type.pk), "table"),
        lambda: selectors.gpu_standings_query(season, gpu_type, search, notices["freeze"]), search,
        request.GET.get("page"),
        lambda page: render_to_string("leaderboard/_gpu_standings.html", {"rows": page.object_list}))
    return render(request, "leaderboard/gpu_leaderboard.html", {
        **notices, "season": season, "gpu_type": gpu_type, "gpu_types": season.gpu_types.order_by("slug"), "page": page,
        "standings_table": table, "search": search, "search_max_chars": SEARCH_MAX_CHARS,
    })


def submission_charts(request, submission_id):
    """A submission's charts alone: its page fetches them when the last verdict arrives."""
    submission = get_object_or_404(Submission.objects.select_related("contestant", "issue__season"), pk=submission_id)
    if not submission_selectors.can_see_submission(request.user, submission):
        raise Http404("no such submission")  # a test or benchmark submission: its owner's and the organizers'
    return render(request, "leaderboard/_submission_charts.html",
                  charts.submission_figures(submission, selectors.judged_runs(submission, request.user)))


def server_error(request):
    """The 500 page with the request's context (who is logged in, the language switch's CSRF token);
    without it when rendering with it fails too, for that may be what broke."""
    try:
        return render(request, "500.html", status=500)
    except Exception:
        return defaults.server_error(request)
