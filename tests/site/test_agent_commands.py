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


def test_two_platforms_on_one_redis_keep_their_agents_users_apart(name, settings):
    """Two sites on one Redis (scripts/platform.sh names each after its database), each with an agent of
    the same name: neither's user replaces the other's, and neither's restore rewrites the other's."""
    settings.AGENT_REDIS_USER_PREFIX, settings.GPU_QUEUE_PREFIX = "gpucf-pfirst-agent-", "pfirst.gpu."
    first_url = run("create_agent", name, "--gpu-type", "cpu").split("Redis URL for the agent host: ")[1].split()[0]
    assert first_url.startswith(f"redis://gpucf-pfirst-agent-{name}:")
    Agent.objects.filter(name=name).delete()  # the second platform's database knows nothing of the first's
    settings.AGENT_REDIS_USER_PREFIX, settings.GPU_QUEUE_PREFIX = "gpucf-psecond-agent-", "psecond.gpu."
    try:
        second_url = run("create_agent", name, "--gpu-type", "cpu").split("Redis URL for the agent host: ")[1].split()[0]
        assert second_url.startswith(f"redis://gpucf-psecond-agent-{name}:")
        agent_redis.restore_missing()
        for url in (first_url, second_url):
            assert redis.Redis.from_url(url).ping()
        # what the second platform's agent may do: move a job from its own platform's queue, never the first's
        admin = redis.Redis.from_url(settings.REDIS_URL)
        user = f"gpucf-psecond-agent-{name}"
        assert admin.execute_command("ACL", "DRYRUN", user, "LMOVE", "rq:queue:psecond.gpu.cpu",
                                     f"rq:claimed:psecond.gpu.{user}", "LEFT", "RIGHT") == b"OK"
        assert admin.execute_command("ACL", "DRYRUN", user, "LMOVE", "rq:queue:pfirst.gpu.cpu",
                                     f"rq:claimed:psecond.gpu.{user}", "LEFT", "RIGHT") != b"OK"
    finally:
        agent_redis.delete(name)
        settings.AGENT_REDIS_USER_PREFIX = "gpucf-pfirst-agent-"
        agent_redis.delete(name)


def test_a_user_prefix_that_cannot_start_a_redis_user_is_refused_clearly(name, settings):
    kept, settings.AGENT_REDIS_USER_PREFIX = settings.AGENT_REDIS_USER_PREFIX, "bad prefix "
    try:
        with pytest.raises(agent_redis.AgentRedisError, match="AGENT_REDIS_USER_PREFIX"):
            agent_redis.username_for(name)
    finally:
        settings.AGENT_REDIS_USER_PREFIX = kept
