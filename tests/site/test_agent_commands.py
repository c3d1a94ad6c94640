"""Registering, rotating and revoking agent hosts from the command line, against the real Redis."""
import io
import uuid

import pytest
import redis
from django.core.management import CommandError, call_command

from submissions.checks import agents_queues_in_database_zero, site_queue_apart_from_agents
from submissions.models import Agent
from submissions.services import accounts, agent_redis


@pytest.fixture
def name(db, settings):
    # ACL users are server-wide and agents stay in database 0: these tests make users and queue nothing,
    # so they run on database 0 of the tests' Redis whichever database REDIS_URL names.
    settings.REDIS_URL = settings.REDIS_URL.rsplit("/", 1)[0] + "/0"
    agent_name = f"cmd-{uuid.uuid4().hex[:8]}"
    yield agent_name
    agent_redis.delete(agent_name)


def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_agent_grants_gpu_types_and_makes_a_redis_user_that_rotation_replaces(name):
    printed = run("create_agent", name, "--gpu-type", "h100:NVIDIA H100", "--gpu-type", "cpu")
    agent = Agent.objects.get(name=name)
    assert sorted(t.slug for t in agent.gpu_types.all()) == ["cpu", "h100"]
    assert agent.gpu_types.get(slug="h100").name == "NVIDIA H100"
    token = printed.split("token ")[1].split()[0]
    assert accounts.agent_by_token(token) == agent
    first_url = printed.split("Redis URL for the agent host: ")[1].split()[0]
    assert first_url.startswith(f"redis://gpucf-agent-{name}:") and first_url.endswith("/0")
    assert redis.Redis.from_url(first_url).ping()

    second_url = run("agent_redis_user", name, "--quiet").strip()
    assert redis.Redis.from_url(second_url).ping()
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis.from_url(first_url).ping()
    run("create_agent", name, "--no-redis-user")  # token rotated, GPU types kept
    assert agent.gpu_types.count() == 2 and accounts.agent_by_token(token) is None


def test_revoke_agent_stops_its_token_and_deletes_its_redis_user(name):
    printed = run("create_agent", name, "--gpu-type", "cpu")
    token = printed.split("token ")[1].split()[0]
    url = printed.split("Redis URL for the agent host: ")[1].split()[0]
    assert "Redis user: deleted" in run("revoke_agent", name)
    assert accounts.agent_by_token(token) is None
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis.from_url(url).ping()


def test_a_name_that_cannot_name_a_redis_user_is_refused_clearly(db):
    with pytest.raises(Exception, match="cannot name a Redis user"):
        run("create_agent", "has a space")
    assert not Agent.objects.filter(name="has a space").exists()


def test_the_system_check_warns_when_the_site_queue_shares_the_agents_database(settings):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    settings.SITE_REDIS_URL = "redis://localhost:6379"
    (warning,) = site_queue_apart_from_agents()
    assert warning.id == "submissions.W001"
    settings.SITE_REDIS_URL = "redis://127.0.0.1:6379/1"
    assert site_queue_apart_from_agents() == []


def test_agents_redis_users_are_refused_while_redis_url_names_another_database(name, settings):
    """The walk of issue 12: with REDIS_URL=redis://host/5 the site queued its jobs in database 5 and handed
    agents a user confined to database 0, where they waited for ever."""
    server = settings.REDIS_URL.rsplit("/", 1)[0]
    settings.REDIS_URL = f"{server}/5"
    with pytest.raises(CommandError, match="REDIS_URL names database 5, but an agent's Redis user stays in database 0"):
        run("agent_redis_user", name)
    assert [w.id for w in agents_queues_in_database_zero()] == ["submissions.W002"]
    settings.REDIS_URL = f"{server}/0"
    assert agents_queues_in_database_zero() == []
    assert run("agent_redis_user", name, "--quiet").strip().endswith("/0")
