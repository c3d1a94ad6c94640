"""bench/dataset/score_gpu.sh, the script run on each GPU machine to benchmark it offline, run here on CPU
(DEVICE=cpu) over a two-sample dataset made as in test_benchmark.py: the builds first, all at once, into
the cache `bench` then judges from; the table and the whole result in $OUT; past its DEADLINE, bench
is interrupted and an incomplete result is still written from the state file, which a second call
goes on from."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from profiler_agent.benchmark import run as bench_run

from .conftest import EXAMPLES, RELU_REFERENCE
from .test_benchmark import _measurement, _record, write_sums


@pytest.fixture
def build_cache(examples_build_cache) -> Path:
    return examples_build_cache  # examples/relu-cpu, judged here, is built there once a run


ROOT = Path(__file__).resolve().parents[2]
# Wrong, and slow in its first call: bench's 5 s past a DEADLINE of 1 end while it is judged, however fast
# the first sample was (not slow at import: the builds import every sample first).
SLOW_FIRST_CALL_WRONG = """import time

import torch


class ModelNew(torch.nn.Module):
    calls = 0

    def forward(self, x):
        ModelNew.calls += 1
        if ModelNew.calls == 1:
            time.sleep(8)
        return x
"""
SCRIPT = ROOT / "bench" / "dataset" / "score_gpu.sh"


@pytest.fixture
def dataset(tmp_path) -> Path:
    """The compiled ReLU (passes) and a wrong torch-only candidate, as the exporter lays them out."""
    root = tmp_path / "gpucodeforces-S1"
    relu, wrong = root / "samples" / "AAAAAA", root / "samples" / "CCCCCC"
    shutil.copytree(EXAMPLES / "relu-cpu", relu)
    wrong.mkdir(parents=True)
    shutil.copy(RELU_REFERENCE, wrong / "torchcode.py")
    (wrong / "cudacode.py").write_text(SLOW_FIRST_CALL_WRONG)
    records = [_record("AAAAAA", relu, 2.0, [_measurement("cpu", 1.5)]), _record("CCCCCC", wrong, 3.0, [])]
    (root / "manifest.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    (root / "dataset.json").write_text(json.dumps({
        "name": "gpucodeforces-S1", "schema": 1, "season": {"code": "S1"}, "sample_count": 2,
        "manifest": "manifest.jsonl", "checksums": "SHA256SUMS"}))
    write_sums(root)
    return root


def run_script(dataset_path, out, cache, *bench_args, **env):
    environment = {**os.environ, "DEVICE": "cpu", "GPU": "cpu", "OUT": str(out), "CACHE": str(cache),
                   "PYTHON": sys.executable, **env}
    return subprocess.run(["bash", str(SCRIPT), str(dataset_path), *bench_args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=500)


def test_the_script_builds_first_stops_at_its_deadline_and_goes_on(dataset, build_cache, tmp_path):
    out = tmp_path / "out"
    # DEADLINE=1: the builds take longer, so bench gets the floor of 5 s and is interrupted
    done = run_script(dataset, out, build_cache, "--timing-budget", "0.3", DEADLINE="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "builds: 2 samples" in done.stdout and "AAAAAA: build timeout" in done.stdout  # cut short after the build
    assert "at the deadline: the table and an incomplete JSON" in done.stderr
    first = json.loads((out / "bench-cpu.json").read_text())
    assert not first["complete"] and len(first["samples"]) < 2
    assert "incomplete:" in (out / "bench-cpu.txt").read_text()

    done = run_script(dataset, out, build_cache, "--timing-budget", "0.3", "--seed", "7")  # the same OUT: its state
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((out / "bench-cpu.json").read_text())
    assert result["complete"] and [r["id"] for r in result["samples"]] == ["AAAAAA", "CCCCCC"]
    assert result["samples"][:len(first["samples"])] == first["samples"]
    relu = result["samples"][0]["result"]
    assert relu["status"] == "passed" and relu["durations_s"]["compile"] < 5  # built before: found in the cache
    table = (out / "bench-cpu.txt").read_text()
    assert "weighted geomean speedup" in table and "not passed: wrong_answer" in table
    assert "2/2 CCCCCC" in (out / "bench-cpu.log").read_text()
    assert bench_run.read_result(out / "bench-cpu.json") == result  # what bench-upload will send
