"""Who may submit to a season: the organizers' access page (admission, admitted accounts, invite codes,
bans; each change with a reason) and the contestants' page where an invite code is entered. The work
is in services/season_access.py."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _, gettext_lazy
from django.views.decorators.http import require_POST

from submissions import season_access_reads
from submissions.models import Admission, Contestant, InviteCode, Season
from submissions.pages.organizer import organizer_required
from submissions.services import accounts, season_access


class InviteForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=season_access.MAX_INVITES_AT_ONCE, initial=1,
                               label=gettext_lazy("How many codes"))
    max_uses = forms.IntegerField(min_value=1, max_value=season_access.MAX_USES_PER_INVITE, required=False,
                                  label=gettext_lazy("Accounts each code admits"))
    expires_at = forms.DateTimeField(required=False, label=gettext_lazy("Expires at"))
    reason = forms.CharField(required=False)


def _first_error(form):
    field, errors = next(iter(form.errors.items()))
    label = form.fields[field].label if field in form.fields else ""
    return f"{label}: {errors[0]}" if label else errors[0]


def _page(request, season, *, failed="", row=None, error="", status=200):
    """The access page. After a refusal, `error` stands next to the form that failed (`failed`, and
    `row`: the contestant or code of a row's form), which keeps what was typed."""
    return render(request, "organizer/season_access.html", {
        "season": season, "admission_choices": Admission.choices, **season_access_reads.overview(season),
        "audit": season_access_reads.access_audit(season), "failed": failed, "failed_row": row, "error": error,
        "posted": request.POST if failed else {}, "time_zone": timezone.get_current_timezone_name(),
        "max_invites": season_access.MAX_INVITES_AT_ONCE, "max_uses_per_invite": season_access.MAX_USES_PER_INVITE,
    }, status=status)


def _refused(request, season, failed, exc, row=None):
    return _page(request, season, failed=failed, row=row, error=str(exc), status=400)


def _season(code):
    return get_object_or_404(Season, code=code)


def _contestant(contestant_id):
    return get_object_or_404(Contestant.objects.select_related("user"), pk=contestant_id)


@organizer_required
def access_page(request, code):
    return _page(request, _season(code))


@organizer_required
@require_POST
def change_admission(request, code):
    season = _season(code)
    try:
        changed = season_access.set_admission(season, request.POST.get("admission", ""), actor=request.user,
                                              reason=request.POST.get("reason", ""))
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "admission", exc)
    if changed:
        messages.success(request, _("Season %(season)s is now: %(admission)s.")
                         % {"season": season.code, "admission": season.get_admission_display()})
    else:
        messages.info(request, _("Season %(season)s was already so.") % {"season": season.code})
    return redirect("organizer_season_access", code=season.code)


@organizer_required
@require_POST
def admit(request, code):
    season = _season(code)
    try:
        contestants = season_access.contestants_named(request.POST.get("accounts", ""))
        admitted, already = season_access.admit(season, contestants, actor=request.user,
                                                reason=request.POST.get("reason", ""))
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "admit", exc)
    if admitted:
        messages.success(request, _("Admitted to %(season)s: %(names)s.")
                         % {"season": season.code, "names": ", ".join(c.user.get_username() for c in admitted)})
    if already:
        messages.info(request, _("Admitted already: %(names)s.")
                      % {"names": ", ".join(c.user.get_username() for c in already)})
    return redirect("organizer_season_access", code=season.code)


@organizer_required
@require_POST
def revoke_admission(request, code, contestant_id):
    season, contestant = _season(code), _contestant(contestant_id)
    try:
        season_access.revoke_admission(season, contestant, actor=request.user, reason=request.POST.get("reason", ""))
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "revoke-admission", exc, contestant.pk)
    messages.success(request, _("The admission of %(account)s to %(season)s is withdrawn.")
                     % {"account": contestant.user.get_username(), "season": season.code})
    return redirect("organizer_season_access", code=season.code)


@organizer_required
@require_POST
def create_invites(request, code):
    season = _season(code)
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _page(request, season, failed="invite", error=_first_error(form), status=400)
    data = form.cleaned_data
    try:
        made = season_access.create_invites(season, actor=request.user, reason=data["reason"], count=data["count"],
                                            max_uses=data["max_uses"], expires_at=data["expires_at"])
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "invite", exc)
    messages.success(request, _("Invite codes made for %(season)s: %(codes)s.")
                     % {"season": season.code, "codes": ", ".join(invite.code for invite in made)})
    return redirect("organizer_season_access", code=season.code)


@organizer_required
@require_POST
def revoke_invite(request, code, invite_code):
    season = _season(code)
    invite = get_object_or_404(InviteCode, season=season, code=invite_code)
    try:
        season_access.revoke_invite(invite, actor=request.user, reason=request.POST.get("reason", ""))
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "revoke-invite", exc, invite.code)
    messages.success(request, _("Invite code %(code)s is withdrawn: nobody joins with it any more.")
                     % {"code": invite.code})
    return redirect("organizer_season_access", code=season.code)


@organizer_required
@require_POST
def ban(request, code):
    season = _season(code)
    try:
        contestant = season_access.contestant_named(request.POST.get("account", ""))
        season_access.ban(season, contestant, actor=request.user, reason=request.POST.get("reason", ""))
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "ban", exc)
    messages.success(request, _("%(account)s is banned from %(season)s: their submissions there are refused and "
                                "their standing is off the boards.")
                     % {"account": contestant.user.get_username(), "season": season.code})
    return redirect("organizer_season_access", code=season.code)


@organizer_required
@require_POST
def lift_ban(request, code, contestant_id):
    season, contestant = _season(code), _contestant(contestant_id)
    try:
        season_access.lift_ban(season, contestant, actor=request.user, reason=request.POST.get("reason", ""))
    except season_access.AccessChangeRefused as exc:
        return _refused(request, season, "lift-ban", exc, contestant.pk)
    messages.success(request, _("The ban of %(account)s from %(season)s is lifted: their standing is back on the "
                                "boards.") % {"account": contestant.user.get_username(), "season": season.code})
    return redirect("organizer_season_access", code=season.code)


@login_required
def join(request, code):
    """A contestant enters an invite code; ?code= fills it in (a link the organizers hand out)."""
    season = _season(code)
    error, status = "", 200
    typed = request.POST.get("code", "") if request.method == "POST" else request.GET.get("code", "")
    if request.method == "POST":
        try:
            _admission, new = season_access.join(season, accounts.contestant_for(request.user), typed)
        except season_access.JoinRefused as exc:
            error, status = str(exc), 400
        else:
            if new:
                messages.success(request, _("You are admitted to %(season)s: open an issue and submit.")
                                 % {"season": season.code})
            else:
                messages.info(request, _("You were admitted to %(season)s already.") % {"season": season.code})
            return redirect("season_detail", code=season.code)
    return render(request, "submissions/season_join.html", {
        "season": season, "typed": typed, "error": error,
        "access": season_access_reads.viewer_access(season, request.user)}, status=status)
