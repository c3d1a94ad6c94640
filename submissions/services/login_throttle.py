"""Refusing password guessing: failed sign-ins are counted in the database per account name and per
client address; past a limit within a window, further attempts are refused (without checking the
password) until the oldest counted failure leaves the window.

Refused attempts are not counted: the refusal ends on its own however often someone keeps trying,
so a guesser cannot lock an account out for longer than the window. A successful sign-in of an
account ends the count for that account (failures before its last login no longer count); the count
of an address is not reset by a success (a guesser would sign in to an account of their own between
guesses).
"""
import ipaddress
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from submissions.models import LoginFailure

PRUNE_AFTER = timedelta(days=1)


def _valid_ip(text):
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return ""


def client_address(request):
    """The client's IP address: REMOTE_ADDR, or, when that is a trusted proxy (TRUSTED_PROXIES), the
    right-most address in X-Forwarded-For that is not one (the client the proxy saw; anything left of
    it was written by the client and proves nothing)."""
    remote = _valid_ip(request.META.get("REMOTE_ADDR", ""))
    if remote not in settings.TRUSTED_PROXIES:
        return remote
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        address = _valid_ip(hop)
        if address and address not in settings.TRUSTED_PROXIES:
            return address
    return remote


def account_key(username):
    return (username or "").strip().casefold()[:150]


def _window_start(now):
    return now - timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_SECONDS)


def _retry_after(failures, limit):
    """When the count falls below the limit: the time the oldest failure that keeps it there leaves."""
    times = list(failures.order_by("-created_at").values_list("created_at", flat=True)[:limit])
    if len(times) < limit:
        return None
    return times[limit - 1] + timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_SECONDS)


def _account_failures(account, now):
    failures = LoginFailure.objects.filter(account=account, created_at__gte=_window_start(now))
    user = get_user_model().objects.filter(username__iexact=account).exclude(last_login=None).order_by("-last_login").first()
    if user is not None:
        failures = failures.filter(created_at__gt=user.last_login)
    return failures


def _when(moment):
    local = timezone.localtime(moment)
    return f"{formats.time_format(local, 'TIME_FORMAT')} {local.tzname()}"


def refusal(username, address, now=None):
    """Why this attempt is refused without checking the password (a translated sentence), or None."""
    now = now or timezone.now()
    account = account_key(username)
    if account and settings.LOGIN_FAILURES_PER_ACCOUNT:
        until = _retry_after(_account_failures(account, now), settings.LOGIN_FAILURES_PER_ACCOUNT)
        if until is not None and until > now:
            return _("Too many failed sign-ins for this account: try again after %(when)s, or reset the "
                     "password.") % {"when": _when(until)}
    if address and settings.LOGIN_FAILURES_PER_ADDRESS:
        failures = LoginFailure.objects.filter(address=address, created_at__gte=_window_start(now))
        until = _retry_after(failures, settings.LOGIN_FAILURES_PER_ADDRESS)
        if until is not None and until > now:
            return _("Too many failed sign-ins from your network address: try again after %(when)s.") % {
                "when": _when(until)}
    return None


def record_failure(username, address, now=None):
    now = now or timezone.now()
    LoginFailure.objects.create(account=account_key(username), address=address or "", created_at=now)
    LoginFailure.objects.filter(created_at__lt=now - max(PRUNE_AFTER, 2 * timedelta(
        seconds=settings.LOGIN_FAILURE_WINDOW_SECONDS))).delete()
