"""Who may submit to a season, and why not: the reads behind every path that creates a submission
(services/submitting.py: the submit form, the API, pull-request intake) and behind the standings,
which keep no row of a banned contestant (services/standings.py). The writes are in
services/season_access.py."""
from django.urls import reverse
from django.utils.translation import gettext as _

from submissions.models import Admission, AuditEntry, Contestant, InviteCode, SeasonAdmission, SeasonBan


def active_ban(season, contestant):
    """The contestant's ban from the season in force, or None."""
    return SeasonBan.objects.filter(season_id=season.pk, contestant_id=contestant.pk, lifted_at__isnull=True).first()


def is_banned(season, contestant) -> bool:
    return SeasonBan.objects.filter(season_id=season.pk, contestant_id=contestant.pk, lifted_at__isnull=True).exists()


def banned_contestant_ids(season_id):
    """The ids of the contestants banned from the season now, as a subquery."""
    return SeasonBan.objects.filter(season_id=season_id, lifted_at__isnull=True).values("contestant_id")


def active_admission(season, contestant):
    return SeasonAdmission.objects.filter(season_id=season.pk, contestant_id=contestant.pk,
                                          revoked_at__isnull=True).first()


def is_admitted(season, contestant) -> bool:
    """Whether the contestant may enter the season: it is open, they are an organizer, or an organizer
    or an invite code admitted them."""
    if season.admission == Admission.OPEN or contestant.user.is_staff:
        return True
    return SeasonAdmission.objects.filter(season_id=season.pk, contestant_id=contestant.pk,
                                          revoked_at__isnull=True).exists()


def join_path(season):
    return reverse("season_join", args=[season.code])


def ban_message(season, ban):
    return (_("you are banned from season %(season)s (%(reason)s): it accepts no issue or submission of yours. "
              "Ask its organizers if you think this is a mistake.")
            % {"season": season.code, "reason": ban.reason})


def not_admitted_message(season, contestant):
    return (_("season %(season)s is invite-only and your account %(account)s is not admitted: enter an invite code "
              "at %(join)s, or ask its organizers to admit your account.")
            % {"season": season.code, "account": contestant.user.get_username(), "join": join_path(season)})


def refusal(season, contestant) -> str:
    """Why the contestant may not open issues or submit in the season ("" when they may): a ban, or an
    invite-only season that has not admitted them. Each message says what to do."""
    ban = active_ban(season, contestant)
    if ban is not None:
        return ban_message(season, ban)
    if not is_admitted(season, contestant):
        return not_admitted_message(season, contestant)
    return ""


def viewer_access(season, user):
    """What the season's page tells a signed-in viewer about their own access: {"banned": their ban or
    None, "admitted": bool, "invite_only": bool}; None for a visitor."""
    if not user.is_authenticated:
        return None
    invite_only = season.admission == Admission.INVITE_ONLY
    contestant = Contestant.objects.filter(user_id=user.pk).select_related("user").first()
    if contestant is None:  # an account made in the admin has no profile until it first submits
        return {"banned": None, "admitted": not invite_only or user.is_staff, "invite_only": invite_only}
    return {"banned": active_ban(season, contestant), "admitted": is_admitted(season, contestant),
            "invite_only": invite_only}


def overview(season):
    """The season's access as its organizers' page and API show it, newest first: the accounts admitted
    now, every invite code, the bans in force and the lifted ones."""
    admissions = (SeasonAdmission.objects.filter(season=season, revoked_at__isnull=True)
                  .select_related("contestant__user", "invite", "admitted_by"))
    invites = InviteCode.objects.filter(season=season).select_related("created_by", "revoked_by")
    bans = list(SeasonBan.objects.filter(season=season).select_related("contestant__user", "banned_by", "lifted_by"))
    return {"admissions": list(admissions), "invites": list(invites),
            "bans": [b for b in bans if b.is_active], "lifted": [b for b in bans if not b.is_active]}


def access_audit(season, limit=100):
    """The season's latest access changes from the audit trail (services/season_access.py records them)."""
    return AuditEntry.objects.filter(object_type="season", object_id=str(season.pk),
                                     action__startswith="access.")[:limit]
