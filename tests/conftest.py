"""Shared by every test package: one build cache for `load_inline`, so a bundle compiles once a session."""
import os
import sys
import uuid
from pathlib import Path

import pytest

# Set before anything imports torch, and inherited by every agent, judge and judged process the tests
# start. Judgings time each model pair for 0.3 s, not 3 s: tests check verdicts, flags and that figures
# exist; those that compare figures pass their own --timing-budget. One torch thread a process: the
# test workers already keep every core busy, and more threads only fight over them (a CPU judging
# of relu-cpu took 19.5 s of CPU with both defaults, 11 s with these).
os.environ.setdefault("PROFILER_AGENT_TIMING_BUDGET", "0.3")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_addoption(parser):
    parser.addoption(
        "--site-sql-only", action="store_true",
        help="run only the site's tests of its SQL: those of tests/site and tests/contest that use the database "
             "(.ci/run's PostgreSQL pass; docs/performance.md says why the browser and end-to-end tests, "
             "which run on SQLite, add no SQL there)")


# pytest-django's fixtures that open the test database
DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_reset_sequences",
                     "django_db_serialized_rollback"}
SITE_SQL_FOLDERS = (ROOT / "tests" / "site", ROOT / "tests" / "contest")


def is_site_sql_test(item):
    uses_database = bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))) or bool(
        item.get_closest_marker("django_db"))
    return uses_database and any(folder in Path(item.path).parents for folder in SITE_SQL_FOLDERS)


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--site-sql-only"):
        return
    config.hook.pytest_deselected(items=[item for item in items if not is_site_sql_test(item)])
    items[:] = [item for item in items if is_site_sql_test(item)]


def pytest_configure(config):
    # Fast password hashing under pytest only (tests/fast_hashers.py); the agent's tests load no Django.
    if "django" not in sys.modules:
        return
    from django.conf import settings

    if settings.configured or os.environ.get("DJANGO_SETTINGS_MODULE"):
        from django.conf import global_settings

        production = getattr(settings, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS)
        # in place of production's own PBKDF2 (the same algorithm name: one of the two would shadow the other)
        settings.PASSWORD_HASHERS = ["tests.fast_hashers.FastPBKDF2PasswordHasher",
                                     *(h for h in production if not h.endswith(".PBKDF2PasswordHasher"))]


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
