"""Contestant accounts, personal API tokens and agent credentials."""
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from submissions.models import Agent, ApiToken, Contestant, hash_secret, new_token


@transaction.atomic
def register_contestant(username, password, *, email="", display_name="", affiliation="", is_staff=False):
    user = get_user_model().objects.create_user(username=username, password=password, email=email, is_staff=is_staff)
    return Contestant.objects.create(user=user, display_name=display_name or username, affiliation=affiliation)


def contestant_for(user):
    """The contestant profile of a user, created on first use (e.g. for a superuser)."""
    contestant, _ = Contestant.objects.get_or_create(user=user, defaults={"display_name": user.get_username()})
    return contestant


def create_api_token(contestant, name="default"):
    """Returns (token row, raw token); the raw token is shown once and never stored."""
    raw = new_token()
    token = ApiToken.objects.create(contestant=contestant, name=name, token_hash=hash_secret(raw), prefix=raw[:8])
    return token, raw


def contestant_by_token(raw):
    token = ApiToken.objects.select_related("contestant__user").filter(
        token_hash=hash_secret(raw), revoked_at__isnull=True
    ).first()
    if token is None or not token.contestant.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.contestant


def create_agent(name):
    """Registers an agent (or rotates its token); returns (agent, raw token)."""
    raw = new_token()
    agent, created = Agent.objects.get_or_create(name=name, defaults={"token_hash": hash_secret(raw)})
    if not created:
        agent.token_hash = hash_secret(raw)
        agent.is_active = True
        agent.save(update_fields=["token_hash", "is_active"])
    return agent, raw


def agent_by_token(raw):
    return Agent.objects.filter(token_hash=hash_secret(raw), is_active=True).first()


def record_heartbeat(agent, *, queues, inventory, versions):
    agent.queues = queues
    agent.inventory = inventory
    agent.versions = versions
    agent.last_heartbeat_at = timezone.now()
    agent.save(update_fields=["queues", "inventory", "versions", "last_heartbeat_at"])
    return agent
