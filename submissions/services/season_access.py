"""Who may submit to a season: its admission (open or invite-only), the accounts an organizer admits,
invite codes and the contestants who enter one, and bans.

Every organizer action needs a reason and is audited on the season (actions `access.*`); a contestant
joining with a code is audited too. Each write locks the season's row first, the lock the standings
take (board_versions.bump), so a ban and a review of the same season never interleave: the review's
refresh of the standings sees the ban and keeps the banned contestant off the boards."""
import re
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from submissions import board_versions, season_access_reads
from submissions.models import (Admission, Contestant, InviteCode, Season, SeasonAdmission, SeasonBan, Submission,
                                new_invite_code, normalized_invite_code)
from submissions.services import audit, reasons, standings

MAX_INVITES_AT_ONCE = 100
# Beyond the database's integer (2**31 - 1 on PostgreSQL) a use limit failed to save; this many is no limit.
MAX_USES_PER_INVITE = 100_000
MAX_NAMES_AT_ONCE = 500


class AccessChangeRefused(ValueError):
    """An organizer's change that cannot be made; the message says why (nothing was changed)."""


class JoinRefused(ValueError):
    """An invite code that does not admit the contestant; the message says why and what to do."""


def _reason(reason, what):
    reason = (reason or "").strip()
    if not reason:
        raise AccessChangeRefused(_("%(what)s needs a reason (kept in the audit trail)") % {"what": what})
    if reasons.too_long(reason):
        raise AccessChangeRefused(reasons.too_long(reason))
    return reason


def _locked(season):
    return Season.objects.select_for_update().get(pk=season.pk)


def _who(contestant):
    return {"contestant": contestant.pk, "account": contestant.user.get_username(),
            "display_name": contestant.display_name}


def _record(action, season, actor, reason, *, before=None, after=None):
    audit.record(action, season, actor=actor, before=before, after=after, reason=reason)


# ---- admission -----------------------------------------------------------------------------


@transaction.atomic
def set_admission(season, admission, *, actor, reason):
    """Make the season open or invite-only; returns whether it changed. Contestants already on its boards
    stay there; an invite-only season takes new issues and submissions from admitted accounts only."""
    if admission not in Admission.values:
        raise AccessChangeRefused(_("unknown admission '%(admission)s'; one of %(known)s")
                                  % {"admission": admission, "known": ", ".join(Admission.values)})
    reason = _reason(reason, _("changing who may enter a season"))
    before = _locked(season).admission
    if before == admission:
        return False
    Season.objects.filter(pk=season.pk).update(admission=admission)
    season.admission = admission
    _record("access.admission_changed", season, actor, reason, before={"admission": before},
            after={"admission": admission})
    return True


def _named(name):
    return (Contestant.objects.select_related("user").filter(user__username__iexact=name).first()
            or Contestant.objects.select_related("user").filter(display_name__iexact=name).first())


def _names(text):
    """The names in `text`: separated by commas, semicolons or lines; a piece no account is called is
    taken as names separated by spaces (a display name may hold spaces, a user name never does)."""
    names = []
    for piece in re.split(r"[,;\n]+", text or ""):
        piece = " ".join(piece.split())
        if piece:
            names += [piece] if " " not in piece or _named(piece) is not None else piece.split()
    return names


def contestants_named(text):
    """The contestants `text` names (user names or display names, whatever the case, separated by commas,
    spaces or lines), in order and once each; refuses the whole list naming every name no account has."""
    names = _names(text)
    if not names:
        raise AccessChangeRefused(_("name at least one account (its user name or display name)"))
    if len(names) > MAX_NAMES_AT_ONCE:
        raise AccessChangeRefused(_("at most %(count)s accounts at once; this list has %(length)s")
                                  % {"count": MAX_NAMES_AT_ONCE, "length": len(names)})
    found, unknown = {}, []
    for name in names:
        contestant = _named(name)
        if contestant is None:
            unknown.append(name)
        else:
            found.setdefault(contestant.pk, contestant)
    if unknown:
        raise AccessChangeRefused(_("no account is called %(names)s: nothing was changed")
                                  % {"names": ", ".join(unknown)})
    return list(found.values())


def contestant_named(text):
    """The one contestant `text` names (a user name or display name)."""
    found = contestants_named(text)
    if len(found) != 1:
        raise AccessChangeRefused(_("name one account at a time, each with its own reason"))
    return found[0]


@transaction.atomic
def admit(season, contestants, *, actor, reason):
    """Admit the accounts to the season; returns (admitted now, admitted already)."""
    reason = _reason(reason, _("admitting an account"))
    _locked(season)
    admitted, already = [], []
    for contestant in contestants:
        if season_access_reads.active_admission(season, contestant) is not None:
            already.append(contestant)
            continue
        SeasonAdmission.objects.create(season=season, contestant=contestant, admitted_by=actor, reason=reason)
        _record("access.admitted", season, actor, reason, after=_who(contestant))
        admitted.append(contestant)
    return admitted, already


@transaction.atomic
def revoke_admission(season, contestant, *, actor, reason):
    """Withdraw the contestant's admission (given by an organizer or an invite code). Their submissions
    and standing stay; an invite-only season takes no new ones from them."""
    reason = _reason(reason, _("withdrawing an admission"))
    _locked(season)
    admission = season_access_reads.active_admission(season, contestant)
    if admission is None:
        raise AccessChangeRefused(_("%(account)s is not admitted to season %(season)s")
                                  % {"account": contestant.user.get_username(), "season": season.code})
    admission.revoked_at, admission.revoked_by, admission.revoke_reason = timezone.now(), actor, reason
    admission.save(update_fields=["revoked_at", "revoked_by", "revoke_reason"])
    _record("access.admission_revoked", season, actor, reason,
            before={**_who(contestant), "invite": admission.invite.code if admission.invite_id else None})
    return admission


# ---- invite codes --------------------------------------------------------------------------


def _checked_limits(count, max_uses, expires_at):
    if not 1 <= count <= MAX_INVITES_AT_ONCE:
        raise AccessChangeRefused(_("make between 1 and %(most)s invite codes at once, not %(count)s")
                                  % {"most": MAX_INVITES_AT_ONCE, "count": count})
    if max_uses is not None and max_uses < 1:
        raise AccessChangeRefused(_("an invite code's use limit is at least 1 (empty: no limit)"))
    if max_uses is not None and max_uses > MAX_USES_PER_INVITE:
        raise AccessChangeRefused(_("an invite code's use limit is at most %(most)s (empty: no limit)")
                                  % {"most": MAX_USES_PER_INVITE})
    if expires_at is not None:
        if not isinstance(expires_at, datetime) or timezone.is_naive(expires_at):
            raise AccessChangeRefused(_("an invite code's expiry needs a date, a time and a time zone"))
        if expires_at <= timezone.now():
            raise AccessChangeRefused(_("an invite code's expiry must lie in the future"))


@transaction.atomic
def create_invites(season, *, actor, reason, count=1, max_uses=None, expires_at=None):
    """`count` new invite codes to the season, each admitting up to `max_uses` accounts (None: any
    number) until `expires_at` (None: never)."""
    reason = _reason(reason, _("making invite codes"))
    _checked_limits(count, max_uses, expires_at)
    _locked(season)
    made = []
    for _index in range(count):
        for _attempt in range(10):
            try:
                with transaction.atomic():
                    made.append(InviteCode.objects.create(season=season, code=new_invite_code(), max_uses=max_uses,
                                                          expires_at=expires_at, reason=reason, created_by=actor))
                break
            except IntegrityError:
                continue  # a code collision: draw another
        else:
            raise RuntimeError("could not draw a free invite code")
    _record("access.invites_created", season, actor, reason, after={
        "codes": [invite.code for invite in made], "max_uses": max_uses,
        "expires_at": expires_at.isoformat() if expires_at else None})
    return made


@transaction.atomic
def revoke_invite(invite, *, actor, reason):
    """Withdraw an invite code: nobody joins with it any more; those it admitted stay admitted."""
    reason = _reason(reason, _("withdrawing an invite code"))
    _locked(invite.season)
    invite = InviteCode.objects.select_for_update().get(pk=invite.pk)
    if invite.is_revoked:
        raise AccessChangeRefused(_("invite code %(code)s was withdrawn already") % {"code": invite.code})
    invite.revoked_at, invite.revoked_by, invite.revoke_reason = timezone.now(), actor, reason
    invite.save(update_fields=["revoked_at", "revoked_by", "revoke_reason"])
    _record("access.invite_revoked", invite.season, actor, reason,
            before={"code": invite.code, "use_count": invite.use_count})
    return invite


@transaction.atomic
def join(season, contestant, code):
    """The contestant enters an invite code of the season; returns (their admission, whether it is new).
    One already admitted keeps their admission and spends no use of the code."""
    typed = normalized_invite_code(code)
    if not typed:
        raise JoinRefused(_("enter the invite code the organizers gave you"))
    ban = season_access_reads.active_ban(season, contestant)
    if ban is not None:
        raise JoinRefused(season_access_reads.ban_message(season, ban))
    admission = season_access_reads.active_admission(season, contestant)
    if admission is not None:
        return admission, False
    invite = InviteCode.objects.select_for_update().filter(season=season, code=typed).first()
    if invite is None:
        raise JoinRefused(_("season %(season)s has no invite code %(code)s: check it, or ask its organizers for one")
                          % {"season": season.code, "code": typed})
    if invite.is_revoked:
        raise JoinRefused(_("invite code %(code)s was withdrawn by the organizers; ask them for another")
                          % {"code": invite.code})
    if invite.has_expired:
        when = timezone.localtime(invite.expires_at)
        shown = f"{formats.date_format(when, 'DATETIME_FORMAT')} {when.tzname()}"
        raise JoinRefused(_("invite code %(code)s expired at %(when)s; ask the organizers for another")
                          % {"code": invite.code, "when": shown})
    if invite.is_used_up:
        raise JoinRefused(_("invite code %(code)s has admitted %(count)s accounts, its limit; ask the organizers for "
                            "another") % {"code": invite.code, "count": invite.use_count})
    try:
        with transaction.atomic():
            admission = SeasonAdmission.objects.create(season=season, contestant=contestant, invite=invite,
                                                       reason=f"invite code {invite.code}")  # stored: not translated
    except IntegrityError:  # admitted a moment ago (another code, an organizer): that admission stands
        return season_access_reads.active_admission(season, contestant), False
    InviteCode.objects.filter(pk=invite.pk).update(use_count=F("use_count") + 1)
    audit.record("access.joined", season, actor=contestant.user, after={**_who(contestant), "invite": invite.code},
                 reason=f"invite code {invite.code}")
    return admission, True


# ---- bans ----------------------------------------------------------------------------------


@transaction.atomic
def ban(season, contestant, *, actor, reason):
    """Ban the contestant from the season: their new issues and submissions there are refused with the
    reason, and their standing leaves every board (standings.remove; the boards' version changes).
    Their submissions and runs stay, and they still see them."""
    reason = _reason(reason, _("banning a contestant"))
    if contestant.user.is_staff:  # organizers may always submit (the access page says so): a ban would refuse them
        raise AccessChangeRefused(_("an organizer's account (%(account)s) cannot be banned: organizers may always "
                                    "submit") % {"account": contestant.user.get_username()})
    _locked(season)
    if season_access_reads.is_banned(season, contestant):
        raise AccessChangeRefused(_("%(account)s is banned from season %(season)s already")
                                  % {"account": contestant.user.get_username(), "season": season.code})
    banned = SeasonBan.objects.create(season=season, contestant=contestant, reason=reason, banned_by=actor)
    standings.remove(season, contestant, actor=actor, reason=f"banned: {reason}")
    board_versions.bump(season.pk)  # a freeze's snapshot reads the bans too (it keeps its rows)
    _record("access.banned", season, actor, reason, after=_who(contestant))
    return banned


@transaction.atomic
def lift_ban(season, contestant, *, actor, reason):
    """Lift the contestant's ban: they may submit again, and their standing is computed again from their
    submissions and reviews, back on the boards."""
    reason = _reason(reason, _("lifting a ban"))
    _locked(season)
    banned = SeasonBan.objects.select_for_update().filter(season=season, contestant=contestant,
                                                          lifted_at__isnull=True).first()
    if banned is None:
        raise AccessChangeRefused(_("%(account)s is not banned from season %(season)s")
                                  % {"account": contestant.user.get_username(), "season": season.code})
    banned.lifted_at, banned.lifted_by, banned.lift_reason = timezone.now(), actor, reason
    banned.save(update_fields=["lifted_at", "lifted_by", "lift_reason"])
    _record("access.unbanned", season, actor, reason, before={**_who(contestant), "ban_reason": banned.reason})
    board_versions.bump(season.pk)
    if Submission.objects.filter(issue__season=season, contestant=contestant).exists():
        standings.refresh_for(season, contestant, actor=actor, reason=f"ban lifted: {reason}")
    return banned

