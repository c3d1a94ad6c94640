"""The season settings page (/organizer/seasons/<code>/settings/): every control of a season an
organizer changes while it runs, each in its own form with a reason (services/season_settings.py
writes and audits). Sections of other parts of the site join through `add_section`: the scoreboard
freeze is the public side's (leaderboard/freeze_controls.py), which the domain does not import."""
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.translation import gettext as _, gettext_lazy
from django.views.decorators.http import require_http_methods

from submissions import season_settings_reads
from submissions.models import Season
from submissions.pages.organizer import organizer_required
from submissions.pages.season_forms import JudgingForm, RankingForm, ScheduleForm, WeightsForm
from submissions.rules import ranking, weights
from submissions.services import season_settings

# name -> (form class, what saving it does, its message once done); a posted form names its section
FORMS = {
    "schedule": (ScheduleForm, lambda season, form, **who: season_settings.change_settings(
        season, form.changes(), **who), gettext_lazy("The dates and submission limits of %(season)s are saved.")),
    "judging": (JudgingForm, lambda season, form, **who: season_settings.change_settings(
        season, form.changes(), **who), gettext_lazy("How %(season)s is judged is saved.")),
    "ranking": (RankingForm, lambda season, form, **who: season_settings.change_ranking(
        season, form.cleaned_data["rule"], form.settings(), **who),
        gettext_lazy("The ranking rule of %(season)s is saved; its standings are ranked by it now.")),
    "weights": (WeightsForm, lambda season, form, **who: season_settings.change_weights(
        season, form.cleaned_data["rule"], form.settings(), **who),
        gettext_lazy("The weight rule of %(season)s is saved.")),
}
_sections = []  # (name, section(season, form or None) -> {"template": ..., ...}), added by other apps


def add_section(name, section):
    """Show `section(season, bound_form_or_None)`'s {"template": path, ...} at the top of the page."""
    if name not in [known for known, _section in _sections]:
        _sections.append((name, section))


def page_url(season, anchor=""):
    return reverse("organizer_season_settings", args=[season.code]) + (f"#{anchor}" if anchor else "")


def render_page(request, season, *, bound=None, status=200):
    """The page, with `bound` ({section name: form}) shown as posted, errors and all."""
    bound = bound or {}
    forms = {name: bound.get(name) or form_class(season) for name, (form_class, _save, _done) in FORMS.items()}
    return render(request, "organizer/season_settings.html", {
        "season": season, "forms": forms, "ranking_rule": ranking.rule_of(season),
        "weight_rule": weights.rule_of(season),
        "sections": [dict(section(season, bound.get(name)), name=name) for name, section in _sections],
        "history": season_settings_reads.season_history(season),
    }, status=status)


@organizer_required
def season_list(request):
    """Every season with the organizer pages of each: its settings, its dataset, its reviews."""
    return render(request, "organizer/seasons.html",
                  {"seasons": Season.objects.prefetch_related("gpu_types").order_by("-starts_at", "-pk")})


def show_refusal(form, refused):
    """A service's refusal on the form: next to each field it names, above the form otherwise."""
    for field, problems in refused.message_dict.items() if hasattr(refused, "error_dict") else [
            (NON_FIELD_ERRORS, refused.messages)]:
        form.add_error(field if field in form.fields else None, problems)


@organizer_required
@require_http_methods(["GET", "POST"])
def settings_page(request, code):
    season = get_object_or_404(Season, code=code)
    if request.method == "GET":
        return render_page(request, season)
    name = request.POST.get("section", "")
    if name not in FORMS:
        messages.error(request, _("Nothing was saved: the form named no section of this page."))
        return redirect(page_url(season))
    form_class, save, done = FORMS[name]
    form = form_class(season, request.POST)
    if form.is_valid():
        try:
            changed = save(season, form, actor=request.user, reason=form.cleaned_data["reason"])
        except season_settings.SettingsRefused as exc:
            show_refusal(form, exc)
        else:
            if changed:
                messages.success(request, done % {"season": season.code})
            else:
                messages.info(request, _("Nothing changed: %(season)s was already so.") % {"season": season.code})
            return redirect(page_url(season, name))
    return render_page(request, season, bound={name: form}, status=400)
