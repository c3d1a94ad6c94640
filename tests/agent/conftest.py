"""Fixtures for the profiler agent's tests: one build cache per session, bundles made on the fly,
and the judge CLI run in-process."""

import json
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from profiler_agent.__main__ import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RELU_REFERENCE = EXAMPLES / "relu-cpu" / "torchcode.py"


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One build cache for the whole session: each candidate source compiles once."""
    return tmp_path_factory.mktemp("builds")


@pytest.fixture
def make_bundle(tmp_path):
    """A bundle with the ReLU reference, the given cudacode.py, and any extra files."""

    def make(candidate: str, name: str = "bundle", **extra_files: str) -> Path:
        root = tmp_path / name
        root.mkdir()
        shutil.copy(RELU_REFERENCE, root / "torchcode.py")
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
