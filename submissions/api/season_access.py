"""HTTP API of season access (mounted under /api/v1/): organizers read and change who may submit to a
season (admission, admitted accounts, invite codes, bans; each change with a reason, audited), and a
contestant joins an invite-only season with a code. A personal API token; the organizers' operations
answer 403 to any other account's."""
from datetime import datetime
from typing import List, Literal, Optional

from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from submissions import season_access_reads, selectors
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import JsonObjectIn, NonBlankText, Text
from submissions.models import Admission, Contestant, InviteCode, Season
from submissions.services import season_access

season_access_router = Router(tags=["season access"], auth=ContestantTokenAuth())

REASON = Field(max_length=2000, description="Why (kept in the audit trail)")


def _organizer(request):
    if not selectors.is_organizer(request.auth.user):
        raise HttpError(403, _("organizers only"))


def _season(code):
    season = Season.objects.filter(code=code).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    return season


def _account(name):
    contestant = Contestant.objects.select_related("user").filter(user__username__iexact=name).first()
    if contestant is None:
        raise HttpError(404, _("no account is called %(names)s: nothing was changed") % {"names": name})
    return contestant


def _iso(value):
    return value.isoformat() if value else None


def _username(user):
    return user.get_username() if user is not None else None


class AdmittedOut(Schema):
    account: str
    display_name: str
    invite: Optional[str] = Field(description="The invite code it came from (null: an organizer admitted it)")
    admitted_by: Optional[str]
    admitted_at: str
    reason: str


class InviteOut(Schema):
    code: str
    join_url: str = Field(description="The season's join page with the code filled in")
    max_uses: Optional[int] = Field(description="How many accounts it admits (null: any number)")
    use_count: int
    expires_at: Optional[str]
    state: Literal["usable", "expired", "used_up", "withdrawn"]
    created_by: Optional[str]
    created_at: str
    reason: str
    withdrawn_at: Optional[str]
    withdraw_reason: str

    @staticmethod
    def of(request, invite, season):
        state = ("withdrawn" if invite.is_revoked else "expired" if invite.has_expired
                 else "used_up" if invite.is_used_up else "usable")
        return InviteOut(code=invite.code, max_uses=invite.max_uses, use_count=invite.use_count,
                         join_url=request.build_absolute_uri(
                             f"{season_access_reads.join_path(season)}?code={invite.code}"),
                         expires_at=_iso(invite.expires_at), state=state, created_by=_username(invite.created_by),
                         created_at=invite.created_at.isoformat(), reason=invite.reason,
                         withdrawn_at=_iso(invite.revoked_at), withdraw_reason=invite.revoke_reason)


class BanOut(Schema):
    account: str
    display_name: str
    reason: str
    banned_by: Optional[str]
    banned_at: str
    lifted_at: Optional[str] = Field(description="null: in force")
    lifted_by: Optional[str]
    lift_reason: str

    @staticmethod
    def of(ban):
        return BanOut(account=ban.contestant.user.get_username(), display_name=ban.contestant.display_name,
                      reason=ban.reason, banned_by=_username(ban.banned_by), banned_at=ban.created_at.isoformat(),
                      lifted_at=_iso(ban.lifted_at), lifted_by=_username(ban.lifted_by), lift_reason=ban.lift_reason)


class SeasonAccessOut(Schema):
    season: str
    admission: Literal[tuple(Admission.values)]
    admitted: List[AdmittedOut]
    invites: List[InviteOut]
    bans: List[BanOut] = Field(description="Bans in force, then lifted ones, newest first")


def _access_out(request, season):
    season.refresh_from_db(fields=["admission"])
    seen = season_access_reads.overview(season)
    return SeasonAccessOut(
        season=season.code, admission=season.admission,
        admitted=[AdmittedOut(account=a.contestant.user.get_username(), display_name=a.contestant.display_name,
                              invite=a.invite.code if a.invite_id else None, admitted_by=_username(a.admitted_by),
                              admitted_at=a.created_at.isoformat(), reason=a.reason) for a in seen["admissions"]],
        invites=[InviteOut.of(request, i, season) for i in seen["invites"]],
        bans=[BanOut.of(b) for b in seen["bans"] + seen["lifted"]])


def _refused(exc):
    return Status(400, {"detail": str(exc)})


@season_access_router.get("/seasons/{code}/access", response=answers({200: SeasonAccessOut}, 401, 403, 404),
                          url_name="season_access")
def read_access(request, code: str):
    """Who may submit to the season: its admission, the accounts admitted, its invite codes and bans."""
    _organizer(request)
    return _access_out(request, _season(code))


class AdmissionIn(JsonObjectIn):
    admission: Literal[tuple(Admission.values)]
    reason: NonBlankText = REASON


@season_access_router.put("/seasons/{code}/access", response=answers({200: SeasonAccessOut}, 401, 403, 404, 422),
                          url_name="season_admission_change")
def change_admission(request, code: str, payload: AdmissionIn):
    """Make the season `open` or `invite_only` (audited)."""
    _organizer(request)
    season = _season(code)
    try:
        season_access.set_admission(season, payload.admission, actor=request.auth.user, reason=payload.reason)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return _access_out(request, season)


class AdmitIn(JsonObjectIn):
    accounts: List[Text] = Field(min_length=1, max_length=season_access.MAX_NAMES_AT_ONCE,
                                 description="User names or display names")
    reason: NonBlankText = REASON


class AdmitOut(Schema):
    admitted: List[str] = Field(description="Accounts admitted now")
    already: List[str] = Field(description="Accounts that were admitted already")


@season_access_router.post("/seasons/{code}/access/admitted", response=answers({200: AdmitOut}, 401, 403, 404, 422),
                           url_name="season_admit")
def admit(request, code: str, payload: AdmitIn):
    """Admit accounts to the season (audited); an unknown name refuses the whole list (400, naming it)."""
    _organizer(request)
    season = _season(code)
    try:
        contestants = season_access.contestants_named(",".join(payload.accounts))
        admitted, already = season_access.admit(season, contestants, actor=request.auth.user, reason=payload.reason)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return AdmitOut(admitted=[c.user.get_username() for c in admitted],
                    already=[c.user.get_username() for c in already])


class ReasonIn(JsonObjectIn):
    reason: NonBlankText = REASON


@season_access_router.post("/seasons/{code}/access/admitted/{account}/withdraw",
                           response=answers({200: SeasonAccessOut}, 401, 403, 404, 422),
                           url_name="season_admission_withdraw")
def withdraw_admission(request, code: str, account: str, payload: ReasonIn):
    """Withdraw an account's admission (audited); its submissions and standing stay."""
    _organizer(request)
    season = _season(code)
    try:
        season_access.revoke_admission(season, _account(account), actor=request.auth.user, reason=payload.reason)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return _access_out(request, season)


class InvitesIn(JsonObjectIn):
    count: int = Field(1, ge=1, le=season_access.MAX_INVITES_AT_ONCE, description="How many codes to make")
    max_uses: Optional[int] = Field(None, ge=1, le=season_access.MAX_USES_PER_INVITE, description="Accounts each code admits (null: any number)")
    expires_at: Optional[datetime] = Field(None, description="ISO 8601; without a time zone, the site's (null: never)")
    reason: NonBlankText = REASON


@season_access_router.post("/seasons/{code}/access/invites",
                           response=answers({201: List[InviteOut]}, 401, 403, 404, 422),
                           url_name="season_invites_create")
def create_invites(request, code: str, payload: InvitesIn):
    """Make invite codes for the season (audited)."""
    _organizer(request)
    season = _season(code)
    expires_at = payload.expires_at
    if expires_at is not None and timezone.is_naive(expires_at):
        expires_at = timezone.make_aware(expires_at)
    try:
        made = season_access.create_invites(season, actor=request.auth.user, reason=payload.reason,
                                            count=payload.count, max_uses=payload.max_uses, expires_at=expires_at)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return Status(201, [InviteOut.of(request, invite, season) for invite in made])


@season_access_router.post("/seasons/{code}/access/invites/{invite_code}/withdraw",
                           response=answers({200: InviteOut}, 401, 403, 404, 422), url_name="season_invite_withdraw")
def withdraw_invite(request, code: str, invite_code: str, payload: ReasonIn):
    """Withdraw an invite code (audited): nobody joins with it any more."""
    _organizer(request)
    season = _season(code)
    invite = InviteCode.objects.filter(season=season, code=invite_code.strip().upper()).first()
    if invite is None:
        raise HttpError(404, _("season %(season)s has no invite code %(code)s: check it, or ask its organizers for one")
                        % {"season": season.code, "code": invite_code})
    try:
        invite = season_access.revoke_invite(invite, actor=request.auth.user, reason=payload.reason)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return InviteOut.of(request, invite, season)


class BanIn(JsonObjectIn):
    account: NonBlankText = Field(max_length=150, description="A user name or display name")
    reason: NonBlankText = Field(max_length=2000, description="Why (kept in the audit trail; shown to the contestant "
                                                              "when a submission is refused)")


@season_access_router.post("/seasons/{code}/access/bans", response=answers({201: BanOut}, 401, 403, 404, 422),
                           url_name="season_ban")
def ban(request, code: str, payload: BanIn):
    """Ban a contestant from the season (audited): their submissions there are refused and their standing
    leaves every public board."""
    _organizer(request)
    season = _season(code)
    try:
        contestant = season_access.contestant_named(payload.account)
        banned = season_access.ban(season, contestant, actor=request.auth.user, reason=payload.reason)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return Status(201, BanOut.of(banned))


@season_access_router.post("/seasons/{code}/access/bans/{account}/lift",
                           response=answers({200: BanOut}, 401, 403, 404, 422), url_name="season_ban_lift")
def lift_ban(request, code: str, account: str, payload: ReasonIn):
    """Lift a contestant's ban (audited): they may submit again and their standing is back on the boards."""
    _organizer(request)
    season = _season(code)
    try:
        lifted = season_access.lift_ban(season, _account(account), actor=request.auth.user, reason=payload.reason)
    except season_access.AccessChangeRefused as exc:
        return _refused(exc)
    return BanOut.of(lifted)


class JoinIn(JsonObjectIn):
    code: NonBlankText = Field(max_length=64, description="The invite code the organizers gave you")


class JoinOut(Schema):
    season: str
    admitted: bool
    new: bool = Field(description="false: you were admitted already (no use of the code was spent)")


@season_access_router.post("/seasons/{code}/join", response=answers({200: JoinOut}, 401, 404, 422),
                           url_name="season_join")
def join(request, code: str, payload: JoinIn):
    """Join an invite-only season with an invite code; 400 saying why a code does not admit you."""
    season = _season(code)
    try:
        _admission, new = season_access.join(season, request.auth, payload.code)
    except season_access.JoinRefused as exc:
        return _refused(exc)
    return JoinOut(season=season.code, admitted=True, new=new)
