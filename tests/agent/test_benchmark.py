"""`python -m profiler_agent bench DATASET` on CPU: a hand-made dataset following docs/dataset.md
("manifest.jsonl, schema 1") with one compiled sample (examples/relu-cpu) and torch-only ones."""

import hashlib
import io
import json
import math
import shutil
import tarfile
import textwrap
from pathlib import Path

import pytest

from profiler_agent.__main__ import main
from profiler_agent.benchmark.score import weighted_geomean

from .conftest import EXAMPLES, RELU_REFERENCE


@pytest.fixture
def build_cache(examples_build_cache) -> Path:
    return examples_build_cache  # examples/relu-cpu, judged here, is built there once a run


FAST = ["--device", "cpu", "--timing-budget", "0.5", "--seed", "7"]
PASSING = """
    import torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
"""
WRONG = """
    import torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return x
"""


def _measurement(gpu_type, candidate_ms):
    return {"gpu_type": gpu_type, "gpu_name": gpu_type.upper(), "device_name": None, "reference_ms": 2.0,
            "candidate_ms": candidate_ms, "speedup": 2.0 / candidate_ms, "tflops": None, "bandwidth_gbs": None,
            "runs_counted": 1, "run_id": 1, "harness_version": "1.0", "finished_at": "2026-11-01T00:00:00Z"}


def _record(code, folder, weight, measurements):
    files = sorted(p.name for p in folder.iterdir())
    return {
        "id": code, "season": "S1", "title": f"sample {code}", "operator": "relu", "framework": "pytorch",
        "level": 1, "path": f"samples/{code}", "reference_file": f"samples/{code}/torchcode.py",
        "candidate_file": f"samples/{code}/cudacode.py", "llm_candidate_file": None, "prompt_file": None,
        "files": [{"path": f"samples/{code}/{n}", "size": (folder / n).stat().st_size,
                   "sha256": hashlib.sha256((folder / n).read_bytes()).hexdigest()} for n in files],
        "inputs": [{"dtype": "float32", "shape": [4096, 1024]}], "inputs_source": "source", "author": "a",
        "affiliation": None, "license": "Apache-2.0", "agreement_version": None, "submission_id": 1,
        "bundle_sha256": "0" * 64, "source": "upload", "pr_url": None, "pr_commit": None,
        "submitted_at": "2026-11-01T00:00:00Z",
        "review": {"accepted_at": "2026-11-01T00:00:00Z", "base_score": 1.0, "bonus": 0.0, "points": []},
        "weight": float(weight), "weight_source": "rule", "measurements": measurements,
    }


def write_sums(root: Path) -> None:
    paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
    (root / "SHA256SUMS").write_text("".join(f"{hashlib.sha256((root / p).read_bytes()).hexdigest()}  {p}\n"
                                             for p in paths))


@pytest.fixture
def dataset(tmp_path) -> Path:
    """Four samples, sorted by id as the exporter writes them: the compiled ReLU (passes), a torch-only
    one that passes, a wrong one, and one passing with no time on the baseline GPU (cpu)."""
    root = tmp_path / "gpucodeforces-S1"
    samples = root / "samples"
    specs = [("AAAAAA", None, 2.0, [_measurement("cpu", 1.5), _measurement("h100", 0.1)]),
             ("BBBBBB", PASSING, 1.0, [_measurement("cpu", 1.2)]),
             ("CCCCCC", WRONG, 3.0, [_measurement("cpu", 1.0)]),
             ("DDDDDD", PASSING, 0.5, [_measurement("h100", 0.1)])]
    records = []
    for code, candidate, weight, measurements in specs:
        folder = samples / code
        if candidate is None:
            shutil.copytree(EXAMPLES / "relu-cpu", folder)
        else:
            folder.mkdir(parents=True)
            shutil.copy(RELU_REFERENCE, folder / "torchcode.py")
            (folder / "cudacode.py").write_text(textwrap.dedent(candidate))
        records.append(_record(code, folder, weight, measurements))
    (root / "manifest.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    info = {"name": "gpucodeforces-S1", "schema": 1, "season": {"code": "S1", "name": "Season 1"},
            "license": "Apache-2.0", "as_of": "2026-11-01T00:00:00Z", "sample_count": len(records),
            "manifest": "manifest.jsonl", "checksums": "SHA256SUMS",
            "weights": {"rule": "level", "settings": {}, "total": sum(r["weight"] for r in records)},
            "rubric": {"name": "s1", "items": []}, "gpu_types": [{"slug": "cpu", "name": "CPU"}]}
    (root / "dataset.json").write_text(json.dumps(info, sort_keys=True, indent=2) + "\n")
    (root / "README.md").write_text("# gpucodeforces-S1\n")
    write_sums(root)
    return root


def bench(capsys, *args):
    code = main(["bench", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_bench_judges_resumes_and_scores(dataset, build_cache, tmp_path, capsys, judge):
    out_json = tmp_path / "run.json"
    common = [dataset, *FAST, "--cache-dir", build_cache, "--json", out_json]

    code, out, err = bench(capsys, *common, "--limit", "1")  # stops after the first sample
    assert code == 0
    first = json.loads(out_json.read_text())
    assert not first["complete"] and [r["id"] for r in first["samples"]] == ["AAAAAA"]
    assert "bench [" in err and "1/4 AAAAAA" in err and "incomplete: 1 of 4" in out

    code, out, err = bench(capsys, *common)  # resumes: the first sample comes from the state file
    assert code == 0
    assert "resuming: 1 samples" in err
    assert "AAAAAA" not in err.replace("resuming", "") and "2/4 BBBBBB" in err and "4/4 DDDDDD" in err
    run = json.loads(out_json.read_text())
    assert run["complete"] and run["dataset"]["checksum"] == hashlib.sha256(
        (dataset / "manifest.jsonl").read_bytes()).hexdigest()
    rows = {r["id"]: r for r in run["samples"]}
    assert list(rows) == ["AAAAAA", "BBBBBB", "CCCCCC", "DDDDDD"]
    assert rows["AAAAAA"]["judged_at"] == first["samples"][0]["judged_at"]
    assert rows["AAAAAA"]["result"] == first["samples"][0]["result"]

    # the same verdicts and flags as `profiler_agent judge` on each bundle, but for `input_memoized`,
    # which two judgings of the same honest call on a loaded 2-core host can read differently (CI's
    # replica: one of two judgings of a plain ReLU against the same ReLU)
    def verdict(result):
        return result["status"], [flag for flag in result["flags"] if flag != "input_memoized"]

    for code_ in ("AAAAAA", "BBBBBB", "CCCCCC"):
        alone = judge(dataset / "samples" / code_, "--timing-budget", "0.5", "--seed", "7").result
        assert verdict(rows[code_]) == verdict(alone), code_
    assert [rows[c]["status"] for c in rows] == ["passed", "passed", "wrong_answer", "passed"]

    # the scores, recomputed from the JSON's own rows
    scores = run["scores"]
    passed = [r for r in rows.values() if r["status"] == "passed"]
    expected = math.exp(sum(r["weight"] * math.log(r["speedup"]) for r in passed) / sum(r["weight"] for r in passed))
    assert scores["speedup"] == pytest.approx(expected) and scores["speedup_samples"] == 3
    assert scores["baseline"] == "cpu" and scores["without_baseline"] == 1 and scores["not_passed"] == 1
    timed = [r for r in passed if r["id"] != "DDDDDD"]
    for r in timed:
        assert r["relative_time"] == pytest.approx(r["candidate_ms"] / r["baseline_ms"])
    assert scores["relative_time"] == pytest.approx(math.exp(
        sum(r["weight"] * math.log(r["relative_time"]) for r in timed) / sum(r["weight"] for r in timed)))
    assert rows["CCCCCC"]["not_scored"] == "not passed: wrong_answer" and rows["CCCCCC"]["relative_time"] is None
    assert rows["DDDDDD"]["not_scored"].startswith("no cpu time")
    assert "not passed: wrong_answer" in out and "weighted geomean speedup" in out

    # another baseline, from the same state: nothing judged again
    code, out, err = bench(capsys, *common, "--baseline", "H100")
    assert code == 0 and "bench [" not in err
    again = json.loads(out_json.read_text())
    assert again["scores"]["relative_time_samples"] == 2  # AAAAAA and DDDDDD have h100 times
    assert again["scores"]["speedup"] == pytest.approx(scores["speedup"])


def test_bench_reads_the_archive_and_refuses_unsafe_ones(dataset, tmp_path, capsys):
    archive = tmp_path / "gpucodeforces-S1-v1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(dataset, arcname=dataset.name)
    code, out, err = bench(capsys, archive, "--device", "cpu", "--limit", "0", "--state", tmp_path / "s.jsonl")
    assert code == 0 and "incomplete: 0 of 4 samples" in out

    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    code, out, err = bench(capsys, evil, "--device", "cpu", "--limit", "0", "--state", tmp_path / "s.jsonl")
    assert code == 2 and "unsafe path" in err and not (tmp_path.parent / "escaped.txt").exists()


def test_bench_refuses_another_schema(dataset, tmp_path, capsys):
    info = json.loads((dataset / "dataset.json").read_text())
    info["schema"] = 2
    (dataset / "dataset.json").write_text(json.dumps(info))
    write_sums(dataset)
    code, out, err = bench(capsys, dataset, "--device", "cpu", "--state", tmp_path / "s.jsonl")
    assert code == 2 and "says schema 2; this agent reads schema 1 only" in err


def test_bench_refuses_a_checksum_mismatch(dataset, tmp_path, capsys):
    candidate = dataset / "samples" / "BBBBBB" / "cudacode.py"
    candidate.write_text(candidate.read_text() + "# changed after the export\n")
    code, out, err = bench(capsys, dataset, "--device", "cpu", "--state", tmp_path / "s.jsonl")
    assert code == 2 and "checksum mismatch: samples/BBBBBB/cudacode.py" in err


def test_weighted_geomean():
    assert weighted_geomean([(2.0, 1.0), (8.0, 1.0)]) == pytest.approx(4.0)
    assert weighted_geomean([(2.0, 3.0), (16.0, 0.0)]) == pytest.approx(2.0)
    assert weighted_geomean([(2.0, 0.0)]) is None
