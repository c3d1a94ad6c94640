"""Contestant accounts, personal API tokens and agent credentials."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from submissions.models import Agent, ApiToken, Contestant, hash_secret, new_token


EMAIL_INDEX = "auth_user_one_account_per_email"  # migration 0015's


class AccountRefused(ValueError):
    """The account cannot be made as asked; the message says why, `field` which of the form's fields it is about."""

    def __init__(self, message, field="email"):
        super().__init__(message)
        self.field = field


def email_refusal(email, account=None):
    """Why `email` may not be a new account's (or `account`'s), or "". Django's password reset mails a
    link to every active account whose address matches the one typed, whatever the case (email__iexact),
    so one address must lead to one account: none may take another's, matched the same way (inactive
    accounts too: one may be activated again). An empty address is no one's. The database holds the
    same rule (migration 0015), for two registrations at one moment."""
    email = (email or "").strip()
    if not email:
        return ""
    others = get_user_model().objects.filter(email__iexact=email)
    if account is not None:
        others = others.exclude(pk=account.pk)
    return _email_taken(email) if others.exists() else ""


def _email_taken(email):
    return _("Another account already uses the e-mail address %(email)s; sign in to it, or reset its "
             "password.") % {"email": email}


@transaction.atomic
def register_contestant(username, password, *, email="", display_name="", affiliation="", is_staff=False,
                        accepts_agreement=True):
    """An account made on the registration page, by a script or by an organizer for someone who accepted
    the agreement (pass accepts_agreement=False when they still have to, on the site)."""
    refused = email_refusal(email)
    if refused:
        raise AccountRefused(refused)
    try:
        with transaction.atomic():  # a savepoint: the failed INSERT must not end the whole transaction
            user = get_user_model().objects.create_user(username=username, password=password, email=email,
                                                        is_staff=is_staff)
    except IntegrityError as exc:  # a registration of the same name or address between the form's check and this one
        if EMAIL_INDEX in str(exc):  # both databases name the index that refused
            raise AccountRefused(_email_taken(email.strip()))
        raise AccountRefused(_("The user name %(name)s was taken a moment ago; pick another.") % {"name": username},
                             field="username")
    contestant = Contestant.objects.create(user=user, display_name=display_name or username, affiliation=affiliation)
    if accepts_agreement:
        accept_agreement(contestant)
    return contestant


def has_current_agreement(contestant):
    return bool(contestant.agreement_accepted_at) and contestant.agreement_version == settings.CONTEST_AGREEMENT_VERSION


def agreement_missing_message():
    return _("accept the contest agreement (version %(version)s) on your account page before submitting") % {
        "version": settings.CONTEST_AGREEMENT_VERSION}


def accept_agreement(contestant):
    """Record acceptance of the current agreement version, with its time (kept in the audit trail)."""
    from submissions.services import audit

    before = {"version": contestant.agreement_version,
              "accepted_at": contestant.agreement_accepted_at.isoformat() if contestant.agreement_accepted_at else None}
    contestant.agreement_version = settings.CONTEST_AGREEMENT_VERSION
    contestant.agreement_accepted_at = timezone.now()
    contestant.save(update_fields=["agreement_version", "agreement_accepted_at"])
    audit.record("agreement.accepted", contestant, actor=contestant.user, before=before,
                 after={"version": contestant.agreement_version, "accepted_at": contestant.agreement_accepted_at.isoformat()})
    return contestant


PROFILE_FIELDS = ("display_name", "affiliation", "gitee_handle", "gitlink_handle", "github_handle")


def update_profile(contestant, **values):
    unknown = set(values) - set(PROFILE_FIELDS)
    if unknown:
        raise ValueError(f"not profile fields: {', '.join(sorted(unknown))}")
    if "display_name" in values and not values["display_name"].strip():
        raise ValueError(_("the display name must not be empty"))
    for key, value in values.items():
        setattr(contestant, key, value.strip())
    contestant.save(update_fields=list(values))
    return contestant


def contestant_for(user):
    """The contestant profile of a user, created on first use (e.g. for a superuser)."""
    contestant, _ = Contestant.objects.get_or_create(user=user, defaults={"display_name": user.get_username()})
    return contestant


def create_api_token(contestant, name="default"):
    """Returns (token row, raw token); the raw token is shown once and never stored."""
    raw = new_token()
    token = ApiToken.objects.create(contestant=contestant, name=name, token_hash=hash_secret(raw), prefix=raw[:8])
    return token, raw


def revoke_api_token(contestant, token_id):
    """Revoke one of the contestant's tokens; False when it is not theirs or already revoked."""
    return bool(ApiToken.objects.filter(pk=token_id, contestant=contestant, revoked_at__isnull=True)
                .update(revoked_at=timezone.now()))


def contestant_by_token(raw):
    token = ApiToken.objects.select_related("contestant__user").filter(
        token_hash=hash_secret(raw), revoked_at__isnull=True
    ).first()
    if token is None or not token.contestant.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.contestant


@transaction.atomic
def create_agent(name, gpu_types=None):
    """Registers an agent (or rotates its token); returns (agent, raw token). `gpu_types` (GpuType
    rows), when given, become the GPU types whose runs it may start; otherwise they stay as they are."""
    raw = new_token()
    agent, created = Agent.objects.get_or_create(name=name, defaults={"token_hash": hash_secret(raw)})
    if not created:
        agent.token_hash = hash_secret(raw)
        agent.is_active = True
        agent.save(update_fields=["token_hash", "is_active"])
    if gpu_types is not None:
        agent.gpu_types.set(gpu_types)
    return agent, raw


def revoke_agent(agent):
    """The agent's token stops working; the runs it is judging go back to the queue now."""
    from submissions.models import Run, RunStatus
    from submissions.services import audit, run_states

    with transaction.atomic():
        Agent.objects.filter(pk=agent.pk).update(is_active=False)
        audit.record("agent.revoked", agent, actor_label="organizer")
        requeued = 0
        for run in Run.objects.select_for_update().filter(agent=agent, status=RunStatus.RUNNING):
            audit.record("run.requeued", run, actor_label="organizer", reason=f"agent {agent.name} was revoked")
            run_states.queue(run)
            requeued += 1
    return requeued


def agent_by_token(raw):
    return Agent.objects.filter(token_hash=hash_secret(raw), is_active=True).first()


def record_heartbeat(agent, *, queues, inventory, versions):
    agent.queues = queues
    agent.inventory = inventory
    agent.versions = versions
    agent.last_heartbeat_at = timezone.now()
    agent.save(update_fields=["queues", "inventory", "versions", "last_heartbeat_at"])
    return agent
