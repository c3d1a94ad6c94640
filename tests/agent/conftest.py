"""Fixtures for the profiler agent's tests: one build cache per session, bundles made on the fly,
and the judge CLI run in-process."""

import functools
import json
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from profiler_agent.__main__ import main
from tests.conftest import share_precompiled_header

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RELU_REFERENCE = EXAMPLES / "relu-cpu" / "torchcode.py"


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory, precompiled_header) -> Path:
    """One build cache for the whole run: each candidate source compiles once. Under pytest-xdist the
    workers share it (the run's temporary folder, above each worker's own): builds are keyed by their
    sources and a build folder is held by one judged process at a time (build_cache.exclusive), so a
    worker finds the build another made, or waits for it. A test that asserts a first compile builds
    a source no other test does, or in a cache of its own (test_judge_cli, test_pch)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return share_precompiled_header(tmp_path_factory.getbasetemp().parent / "builds", precompiled_header)
    return share_precompiled_header(tmp_path_factory.mktemp("builds"), precompiled_header)


@pytest.fixture
def examples_build_cache(shared_build_cache) -> Path:
    """The session's shared cache (tests/conftest.py), the `build_cache` of a module whose tests judge
    examples/relu-cpu: it is built there once a run for the e2e, browser and ncu tests too."""
    return Path(shared_build_cache)


SMALL_RELU_ROWS = 256  # 1 MiB of input instead of 16: a judging's trials, copies and timing cost a fraction


def relu_reference(rows: int | None = None) -> str:
    """The example's ReLU reference (4096 x 1024 floats), or the same with `rows` rows."""
    text = RELU_REFERENCE.read_text()
    if rows is None:
        return text
    assert "batch_size = 4096\n" in text, "examples/relu-cpu/torchcode.py no longer sets batch_size = 4096"
    return text.replace("batch_size = 4096\n", f"batch_size = {rows}\n")


@pytest.fixture
def relu_rows() -> int | None:
    """Rows of the ReLU reference that make_bundle writes: the example's own size here; a module whose
    tests judge what does not depend on the size (a verdict, a flag, a log) overrides this with
    SMALL_RELU_ROWS."""
    return None


@pytest.fixture
def make_bundle(tmp_path, relu_rows):
    """A bundle with the ReLU reference, the given cudacode.py, and any extra files."""

    def make(candidate: str, name: str = "bundle", **extra_files: str) -> Path:
        root = tmp_path / name
        root.mkdir()
        (root / "torchcode.py").write_text(relu_reference(relu_rows))
        (root / "cudacode.py").write_text(textwrap.dedent(candidate))
        for filename, text in extra_files.items():
            (root / filename).write_text(textwrap.dedent(text))
        return root

    return make


@dataclass
class JudgeOutcome:
    exit_code: int
    result: dict | None
    stdout: str
    stderr: str


@pytest.fixture
def judge(build_cache, capsys, tmp_path):
    """Run `python -m profiler_agent judge` in-process on CPU; returns exit code, JSON and output."""
    calls = []

    def run(bundle, *extra: str) -> JudgeOutcome:
        calls.append(bundle)
        json_path = tmp_path / f"result-{len(calls)}.json"
        args = ["judge", str(bundle), "--device", "cpu", "--cache-dir", str(build_cache), "--json", str(json_path)]
        code = main([*args, *extra])
        captured = capsys.readouterr()
        result = json.loads(json_path.read_text()) if json_path.exists() else None
        return JudgeOutcome(code, result, captured.out, captured.err)

    return run


REDIS_URL = "redis://127.0.0.1:6379/15"  # the worker tests' Redis database


@pytest.fixture
def site():
    """The small real HTTP site of tests/agent/fake_site.py, recording what an agent sends."""
    from tests.agent.fake_site import FakeSite

    fake = FakeSite()
    yield fake
    fake.close()


@pytest.fixture
def queue():
    """A queue of the test's own on the worker tests' Redis, emptied after."""
    import uuid

    from redis import Redis
    from rq import Queue
    from rq.job import Job
    from rq.serializers import JSONSerializer

    connection = Redis.from_url(REDIS_URL)
    q = Queue(f"gpu.test-{uuid.uuid4().hex[:10]}", connection=connection, serializer=JSONSerializer)
    yield q
    for job_id in q.job_ids + q.failed_job_registry.get_job_ids() + q.finished_job_registry.get_job_ids():
        Job.fetch(job_id, connection=connection, serializer=JSONSerializer).delete()
    q.delete(delete_jobs=True)


@pytest.fixture
def stand_in_ncu(tmp_path, monkeypatch):
    """install(mode="replay", table=...): the stand-in ncu (tests/agent/stand_in_ncu.py) first on
    PATH; returns the file where its "hang" mode writes its sleeper's pid."""
    from tests.agent import stand_in_ncu as stand_in

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    return functools.partial(stand_in.install, bin_dir, tmp_path / "sleeper.pid", monkeypatch)
