"""Account pages: registration, profile, the contest agreement, personal API tokens."""
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from submissions import selectors
from submissions.models import ApiToken
from submissions.pages.forms import ProfileForm, RegisterForm
from submissions.services import accounts


def register(request):
    form = RegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            contestant = accounts.register_contestant(data["username"], data["password1"], email=data["email"],
                                                      display_name=data["display_name"],
                                                      affiliation=data["affiliation"])
        except accounts.AccountRefused as exc:  # another account took the address or name since the form looked
            form.add_error(exc.field, str(exc))
        else:
            login(request, contestant.user)
            messages.success(request, _("Welcome, %(name)s.") % {"name": contestant.display_name})
            return redirect("home")
    return render(request, "registration/register.html", {"form": form, "agreement_version": settings.CONTEST_AGREEMENT_VERSION})


# Where a new token waits for the account page that shows it, once (the session, never a cookie).
NEW_TOKEN_KEY = "new_api_token"


@login_required
def account(request):
    contestant = accounts.contestant_for(request.user)
    new_token = request.session.pop(NEW_TOKEN_KEY, None)
    form = ProfileForm(request.POST or None, instance=contestant)
    if request.method == "POST" and form.is_valid():
        accounts.update_profile(contestant, **form.cleaned_data)
        messages.success(request, _("Profile saved."))
        return redirect("account")
    return render(request, "submissions/account.html", {
        "contestant": contestant, "form": form, "new_token": new_token,
        "agreement_current": accounts.has_current_agreement(contestant),
        "agreement_version": settings.CONTEST_AGREEMENT_VERSION,
        "tokens": contestant.api_tokens.order_by("-created_at"),
        "issues": contestant.issues.select_related("season"),
        "submissions": selectors.contestant_submissions(contestant, request.user),
    })


@login_required
def agreement(request):
    contestant = accounts.contestant_for(request.user)
    if request.method == "POST":
        if request.POST.get("accept") != "yes":
            messages.error(request, _("Tick the box to accept the agreement."))
        else:
            accounts.accept_agreement(contestant)
            messages.success(request, _("You accepted the contest agreement (version %(version)s).")
                             % {"version": contestant.agreement_version})
            return redirect("account")
    return render(request, "registration/agreement.html", {
        "contestant": contestant, "agreement_version": settings.CONTEST_AGREEMENT_VERSION,
        "agreement_current": accounts.has_current_agreement(contestant),
    })


@login_required
@require_POST
def create_token(request):
    contestant = accounts.contestant_for(request.user)
    name = request.POST.get("name", "").strip() or "default"
    longest = ApiToken._meta.get_field("name").max_length
    if len(name) > longest:  # PostgreSQL would refuse it with a server error
        messages.error(request, _("A token's name has at most %(count)s characters; this one has %(length)s.")
                       % {"count": longest, "length": len(name)})
        return redirect("account")
    token, raw = accounts.create_api_token(contestant, name=name)
    request.session[NEW_TOKEN_KEY] = raw  # for the next page only: the account page takes it out
    return redirect("account")


@login_required
@require_POST
def revoke_token(request, token_id):
    contestant = accounts.contestant_for(request.user)
    if accounts.revoke_api_token(contestant, token_id):
        messages.success(request, _("Token revoked; it no longer works."))
    else:
        messages.error(request, _("No such active token of yours."))
    return redirect("account")
