"""Shared by every test package: one build cache for `load_inline`, so a bundle compiles once a session."""
import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session", autouse=True)
def shared_build_cache():
    # Kept under var/ so local reruns reuse builds; CI's fresh clone compiles each source once.
    cache = os.environ.setdefault("PROFILER_AGENT_CACHE_DIR", str(ROOT / "var" / "test-build-cache"))
    Path(cache).mkdir(parents=True, exist_ok=True)
    return cache


@pytest.fixture
def queue_prefix(settings):
    """Queue names of this test alone on the shared Redis."""
    settings.GPU_QUEUE_PREFIX = f"live-{uuid.uuid4().hex[:10]}.gpu."
    yield settings.GPU_QUEUE_PREFIX
    from submissions import queueing

    for connection in (queueing.connection(), queueing.site_connection()):
        for key in connection.scan_iter(f"rq:*{settings.GPU_QUEUE_PREFIX}*"):
            connection.delete(key)


@pytest.fixture
def start_agent(tmp_path):
    """Starts real `profiler_agent work` processes; all are stopped when the test ends."""
    from tests.live_agent import AgentProcess

    agents = []

    def start(site, token, queue, **kwargs):
        agent = AgentProcess(site, token, queue, tmp_path / f"agent-{len(agents)}.log", **kwargs)
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        agent.stop()


@pytest.fixture
def agent_redis_users(queue_prefix):
    """Makes Redis ACL users for agent hosts (as `manage.py create_agent` does); deleted afterwards."""
    from submissions.services import agent_redis

    made = []

    def make(agent_name):
        url = agent_redis.create_or_rotate(agent_name)
        made.append(agent_name)
        return url

    yield make
    for name in made:
        agent_redis.delete(name)


@pytest.fixture(autouse=True)
def english_after_each_test():
    """LocaleMiddleware activates the language a request asks for in the test's own thread and leaves it
    active: a test's last Chinese request would make the next test's services speak Chinese."""
    yield
    translation = sys.modules.get("django.utils.translation")  # agent tests never load Django
    if translation is not None:
        translation.deactivate()
