"""The scoreboard freeze on the season settings page (submissions/pages/season_settings.py): its state
and a button to freeze or thaw, with a reason (leaderboard/services.py snapshots and audits). Only
the control: what the public sees during a freeze is the board pages' concern."""
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from leaderboard import services
from leaderboard.models import ScoreboardFreeze
from submissions.models import Season
from submissions.pages import season_settings
from submissions.pages.organizer import organizer_required
from submissions.pages.season_forms import ReasonForm

SECTION = "freeze"
FREEZE, THAW = "freeze", "thaw"


def freeze_form(data=None):
    return ReasonForm(data, prefix=SECTION)


def freeze_section(season, form=None):
    """The page's section: the freeze in force (or None) and the form of the next action."""
    return {"template": "organizer/_season_freeze.html", "title": _("Scoreboard freeze"), "form": form or freeze_form(),
            "freeze": ScoreboardFreeze.objects.filter(season=season).select_related("frozen_by").first()}


@organizer_required
@require_POST
def change_freeze(request, code):
    """Freeze or thaw the season's public scoreboard, as the button said (a board frozen or thawed
    meanwhile by someone else is refused, not toggled back)."""
    season = get_object_or_404(Season, code=code)
    form = freeze_form(request.POST)
    action = request.POST.get(f"{SECTION}-action")
    if action not in (FREEZE, THAW):
        form.add_error(None, _("Say whether to freeze or to thaw the scoreboard."))
    elif form.is_valid():
        reason = form.cleaned_data["reason"]
        try:
            if action == FREEZE:
                services.freeze_scoreboard(season, request.user, reason=reason)
            else:
                services.unfreeze_scoreboard(season, request.user, reason=reason)
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, (_("The scoreboard of %(season)s is frozen: the public sees it as it is now.")
                                       if action == FREEZE else
                                       _("The scoreboard of %(season)s is thawed: the public sees the live board."))
                             % {"season": season.code})
            return redirect(season_settings.page_url(season, SECTION))
    return season_settings.render_page(request, season, bound={SECTION: form}, status=400)
