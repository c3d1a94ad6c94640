import os
import uuid

import pytest
from rq.job import Job

from submissions import queueing
from submissions.models import GpuType, Season
from submissions.services import accounts
from tests.site.board_caches import BoardCache


@pytest.fixture(autouse=True)
def isolated_queues(settings):
    """Each test gets its own queue names on the real Redis, so tests never see each other's jobs."""
    settings.GPU_QUEUE_PREFIX = f"test-{uuid.uuid4().hex[:10]}.gpu."
    settings.SITE_QUEUE_NAME = f"{settings.GPU_QUEUE_PREFIX}site"
    settings.RQ_QUEUES = {"default": {"URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")}}
    yield settings.GPU_QUEUE_PREFIX
    for connection in (queueing.connection(), queueing.site_connection()):
        for key in connection.scan_iter(f"rq:*:{settings.GPU_QUEUE_PREFIX}*"):
            connection.delete(key)


@pytest.fixture
def season(db):
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    c500 = GpuType.objects.create(slug="c500", name="MetaX C500")
    # Most tests judge with one host and no second judging, as a season with it off does;
    # tests/site/test_second_judging.py covers the default (results that change the board wait for one).
    s = Season.objects.create(code="S1", name="Season one", second_judging="off")
    s.gpu_types.add(cpu, c500)
    return s


@pytest.fixture
def alice(db):
    return accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")


@pytest.fixture
def bob(db):
    return accounts.register_contestant("bob", "pw-bob-123", display_name="Bob")


@pytest.fixture
def organizer(db):
    return accounts.register_contestant("organizer", "pw-org-123", display_name="Org", is_staff=True)


@pytest.fixture
def agent_and_token(season):
    """An agent the site lets judge every GPU type of the season."""
    return accounts.create_agent("test-agent", GpuType.objects.all())


def job_kwargs(run):
    """What the agent would receive for this run: read back from the real Redis job (JSON)."""
    return Job.fetch(run.rq_job_id, connection=queueing.connection(), serializer=queueing.SERIALIZER).kwargs


@pytest.fixture(params=["locmem", "redis"])
def board_cache(request, settings):
    cache = BoardCache(request.param)
    settings.CACHES = {**settings.CACHES, "boards": cache.settings}
    yield cache
    cache.empty()
