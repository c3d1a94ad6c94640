"""Shared by every test package: one build cache for `load_inline`, so a bundle compiles once a session."""
import json
import os
import sys
import uuid
from collections import Counter
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
SITE_FOLDERS = (ROOT / "tests" / "site", ROOT / "tests" / "contest")  # the site's own tests: none builds


def in_site_folders(path) -> bool:
    return any(folder in Path(path).parents for folder in SITE_FOLDERS)


def is_site_sql_test(item):
    uses_database = bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))) or bool(
        item.get_closest_marker("django_db"))
    return uses_database and in_site_folders(item.path)


# Seconds each module took in a whole run (scripts/module_seconds.py writes it from a JUnit report).
MODULE_SECONDS = json.loads((ROOT / "tests" / "module_seconds.json").read_text())
UNMEASURED_TEST_SECONDS = 0.5  # a module not in it: half a second a test


def longest_modules_first(items):
    """The test workers take whole modules (--dist loadfile) in this order (--no-loadscope-reorder): the
    longest first, so that none of them is left running alone at the end while the other workers idle."""
    counts = Counter(item.nodeid.split("::")[0] for item in items)

    def seconds(item):
        module = item.nodeid.split("::")[0]
        return MODULE_SECONDS.get(module, UNMEASURED_TEST_SECONDS * counts[module])

    items.sort(key=lambda item: -seconds(item))  # stable: a module's tests keep their order


def pytest_collection_modifyitems(config, items):
    if config.getoption("--site-sql-only"):
        config.hook.pytest_deselected(items=[item for item in items if not is_site_sql_test(item)])
        items[:] = [item for item in items if is_site_sql_test(item)]
    longest_modules_first(items)


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


# The extra_cflags of the suite's C++ extensions (examples/relu-cpu's): one precompiled torch/extension.h
# serves them all, a build with it takes half the g++ time of one without (bench/build/cold_compile.py).
TEST_CFLAGS = ["-O3"]


@pytest.fixture(scope="session")
def precompiled_header(shared_build_cache) -> Path:
    """The shared build cache's precompiled headers (profiler_agent.executors.pch), with the one for
    TEST_CFLAGS made. scripts/test.sh makes it before the test workers start, so that no build of the
    run goes without it (a build whose flags change is built again); made here for a bare pytest."""
    import fcntl

    from profiler_agent.executors import build_cache, pch

    root = build_cache.pch_root(Path(shared_build_cache))
    root.mkdir(parents=True, exist_ok=True)
    with open(root.parent / "pch.flock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker makes it, the others wait for it
        pch.prepare(root, TEST_CFLAGS, with_cuda=False)
    return root


@pytest.fixture(autouse=True)
def header_before_any_build(request):
    """Every build of the run finds the precompiled header: the tests that may build (all but the site's)."""
    if not in_site_folders(request.node.path):
        request.getfixturevalue("precompiled_header")


def share_precompiled_header(cache_dir: Path, header_root: Path) -> Path:
    """A build cache of a test's own, whose builds use the run's precompiled header; returns it."""
    from profiler_agent.executors import build_cache

    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        build_cache.pch_root(cache_dir).symlink_to(header_root, target_is_directory=True)
    except FileExistsError:  # another test worker linked the shared cache first
        pass
    return cache_dir


@pytest.fixture
def queue_prefix(settings):
    """Queue names of this test alone on the shared Redis."""
    settings.GPU_QUEUE_PREFIX = f"live-{uuid.uuid4().hex[:10]}.gpu."
    yield settings.GPU_QUEUE_PREFIX
    from submissions import queueing

    job_prefix = queueing.job_id_prefix("")[:-1]  # job ids spell the prefix in RQ's alphabet (live-x-gpu-)
    for connection in (queueing.connection(), queueing.site_connection()):
        for pattern in (f"rq:*{settings.GPU_QUEUE_PREFIX}*", f"rq:*{job_prefix}*"):
            for key in connection.scan_iter(pattern):
                connection.delete(key)


@pytest.fixture
def start_agent(tmp_path):
    """Starts real `profiler_agent work` processes; all are stopped when the test ends."""
    from live_platform.agents import AgentProcess

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
