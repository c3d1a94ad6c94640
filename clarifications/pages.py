"""The clarifications pages: a season's (announcements, answers for everyone, one's own questions and
the form to ask) and the organizers' (questions waiting for an answer, answers, announcements)."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from clarifications import selectors, services
from clarifications.forms import PUBLIC, PRIVATE, AnnouncementForm, AnswerForm, AskForm
from clarifications.models import Announcement, Clarification
from submissions.models import Season
from submissions.pages.organizer import organizer_required

ORGANIZER_ANSWERED_SHOWN = 50
ORGANIZER_ANNOUNCEMENTS_SHOWN = 50


def _season_page(request, season, form, status=200):
    opened_at = timezone.now()  # before reading: what is published later stays unread
    shown = selectors.season_clarifications(season, request.user)
    if shown.unread:  # what this visit shows is read now
        services.mark_read(request.user, season, opened_at)
    return render(request, "clarifications/season.html", {"season": season, "shown": shown, "form": form},
                  status=status)


def season_clarifications(request, code):
    season = get_object_or_404(Season, code=code)
    # "Ask about this issue" on an issue's page names it
    return _season_page(request, season, AskForm(initial={"issue": request.GET.get("issue", "")[:6]}))


@login_required
@require_POST
def ask(request, code):
    season = get_object_or_404(Season, code=code)
    form = AskForm(request.POST)
    status = 400
    if form.is_valid():
        try:
            services.ask(season, request.user, form.cleaned_data["question"], issue_code=form.cleaned_data["issue"])
        except services.UnknownIssue as exc:
            form.add_error("issue", str(exc))
        except services.TooManyQuestions as exc:
            form.add_error(None, str(exc))
            status = 429
        except services.ClarificationRefused as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Your question is sent to the organizers; their answer will show here."))
            return redirect(reverse("season_clarifications", args=[season.code]) + "#mine")
    return _season_page(request, season, form, status=status)


def _back_to(season):
    return redirect(reverse("organizer_clarifications") + "?" + urlencode({"season": season.code}))


def _answer_form(clarification, data=None):
    initial = {"answer": clarification.answer, "visibility": PUBLIC if clarification.public else PRIVATE}
    return AnswerForm(data, initial=initial if clarification.is_answered else None,
                      auto_id=f"answer-{clarification.pk}-%s")


def _organizer_page(request, season, *, failed=None, announcement_form=None, status=200):
    """`failed`: (question, its bound answer form), drawn with its errors and what was typed."""
    def with_form(question):
        if failed and failed[0].pk == question.pk:
            question.form = failed[1]
        else:
            question.form = _answer_form(question)
        return question

    return render(request, "clarifications/organizer.html", {
        "season": season, "seasons": Season.objects.order_by("-starts_at", "-pk"),
        "waiting": [with_form(q) for q in selectors.waiting(season)[:selectors.SHOWN]],
        "answered": [with_form(q) for q in selectors.answered(season)[:ORGANIZER_ANSWERED_SHOWN]],
        "announcements": list(selectors.every_announcement(season)[:ORGANIZER_ANNOUNCEMENTS_SHOWN]),
        "announcement_form": announcement_form or AnnouncementForm(initial={"season": season.code if season else None}),
    }, status=status)


@organizer_required
def organizer_page(request):
    code = request.GET.get("season", "").strip()
    return _organizer_page(request, get_object_or_404(Season, code=code) if code else None)


@organizer_required
@require_POST
def answer(request, clarification_id):
    clarification = get_object_or_404(Clarification.objects.select_related("season", "issue"), pk=clarification_id)
    form = _answer_form(clarification, request.POST)
    if form.is_valid():
        try:
            changed = services.answer(clarification, request.user, form.cleaned_data["answer"], public=form.public,
                                      reason=form.cleaned_data["reason"])
        except services.ClarificationRefused as exc:
            form.add_error(None, str(exc))
        else:
            if changed:
                messages.success(request, (_("Question #%(number)s is answered for everyone.") if form.public
                                           else _("Question #%(number)s is answered to the asker alone."))
                                 % {"number": clarification.pk})
            else:
                messages.info(request, _("Question #%(number)s already had this answer.") % {"number": clarification.pk})
            return _back_to(clarification.season)
    return _organizer_page(request, clarification.season, failed=(clarification, form), status=400)


@organizer_required
@require_POST
def announce(request):
    form = AnnouncementForm(request.POST)
    if form.is_valid():
        season = form.cleaned_data["season"]
        try:
            services.post_announcement(season, request.user, form.cleaned_data["text"], reason=form.cleaned_data["reason"])
        except services.ClarificationRefused as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("The announcement is posted on the pages of %(season)s.") % {"season": season.code})
            return _back_to(season)
    return _organizer_page(request, form.cleaned_data.get("season"), announcement_form=form, status=400)


@organizer_required
@require_POST
def withdraw(request, announcement_id):
    announcement = get_object_or_404(Announcement.objects.select_related("season"), pk=announcement_id)
    try:
        done = services.withdraw_announcement(announcement, request.user, reason=request.POST.get("reason", ""))
    except services.ClarificationRefused as exc:
        messages.error(request, str(exc))
    else:
        if done:
            messages.success(request, _("The announcement is withdrawn from the pages of %(season)s.")
                             % {"season": announcement.season.code})
        else:
            messages.info(request, _("The announcement was already withdrawn."))
    return _back_to(announcement.season)
