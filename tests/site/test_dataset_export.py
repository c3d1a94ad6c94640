"""Dataset export (docs/dataset.md): a season's accepted samples written to disk as a folder and a
.tar.gz, numbered per season, audited; the manifest read back by pyarrow in a fresh process; the same
season state giving the same bytes."""
import hashlib
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from django.utils import translation

from submissions import dataset_export, input_specs
from submissions.bundles import build_bundle
from submissions.models import AuditEntry, DatasetExport, Run, RunStatus, Verdict
from submissions.services import accounts, datasets, fleet, judging, reviewing, submitting, weighting
from tests.judged_data import mark_passed
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db

FP16_TORCHCODE = b"""import torch
import torch.nn as nn

batch_size = 8
dim = 1024 * 2


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    a = torch.randn(batch_size, dim, dtype=torch.float16)
    return [a, torch.randn((dim, 4), dtype=torch.float16)]


def get_init_inputs():
    return []
"""


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    settings.DATASET_LICENSE = "Apache-2.0"
    return settings.DATASET_EXPORT_DIR


def sample(season, contestant, organizer, *, operator, level, framework="pytorch", files=None, speedups=None):
    issue = submitting.open_issue(season, contestant, title=f"{operator} by {contestant.display_name}",
                                  operator=operator, framework=framework, level=level)
    submission = submitting.create_submission(contestant, issue, build_bundle(files or valid_files()))
    for slug, (speedup, ms) in (speedups or {"cpu": (2.0, 1.0)}).items():
        mark_passed(submission, slug, speedup, ms)
    Run.objects.filter(submission=submission, status=RunStatus.DONE).update(harness_version="1.0")
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: judged on the given GPU types only")
    return submission


@pytest.fixture
def world(season, alice, bob, organizer):
    relu = sample(season, alice, organizer, operator="ReLU", level=1,
                  speedups={"cpu": (2.0, 1.0), "c500": (4.0, 0.25)})
    gemm_files = {**valid_files(), "torchcode.py": FP16_TORCHCODE, "prompt.txt": "写一个 GEMM".encode()}
    gemm = sample(season, bob, organizer, operator="GEMM", level=3, framework="paddle", files=gemm_files)
    # not in the dataset: rejected, and one accepted then rejected
    rejected = submitting.create_submission(alice, submitting.open_issue(season, alice, title="x", operator="x"),
                                            build_bundle(valid_files()))
    reviewing.review_submission(rejected, organizer.user, "rejected", reason="copied")
    withdrawn = sample(season, bob, organizer, operator="Softmax", level=2)
    reviewing.review_submission(withdrawn, organizer.user, "rejected", reason="plagiarism found later")
    return {"relu": relu, "gemm": gemm}


def load_with_pyarrow(manifest):
    """The manifest as rows, read by pyarrow in a fresh interpreter that knows nothing of the site."""
    code = ("import json, sys, pyarrow.json as pj; table = pj.read_json(sys.argv[1]); "
            "print(json.dumps({'rows': table.to_pylist(), 'columns': table.column_names}))")
    done = subprocess.run([sys.executable, "-c", code, str(manifest)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_export_is_on_disk_and_a_fresh_process_loads_its_manifest_with_pyarrow(world, season, organizer, export_dir):
    export = datasets.export_season(season, actor=organizer.user, reason="first release")
    assert (export.number, export.sample_count) == (1, 2)
    folder = datasets.unpacked_path(export)
    assert folder == export_dir / "S1" / "v1" / "gpucodeforces-S1"
    loaded = load_with_pyarrow(folder / "manifest.jsonl")
    rows = {row["id"]: row for row in loaded["rows"]}
    relu, gemm = rows[world["relu"].issue.code], rows[world["gemm"].issue.code]
    assert sorted(rows) == sorted([world["relu"].issue.code, world["gemm"].issue.code])
    assert [r["id"] for r in loaded["rows"]] == sorted(rows)  # sorted by id
    assert (relu["operator"], relu["framework"], relu["level"], relu["author"]) == ("ReLU", "pytorch", 1, "Alice")
    assert (gemm["operator"], gemm["framework"], gemm["level"], gemm["author"]) == ("GEMM", "paddle", 3, "Bob")
    assert relu["license"] == "Apache-2.0" and relu["agreement_version"] == "2025-1"
    assert relu["inputs"] == [{"dtype": "float32", "shape": [16, 16]}] and relu["inputs_source"] == "source"
    assert gemm["inputs"] == [{"dtype": "float16", "shape": [8, 2048]}, {"dtype": "float16", "shape": [2048, 4]}]
    assert {p["item"]: p["points"] for p in relu["review"]["points"]} == {
        "bandwidth": 0.0, "execution_time": 5.0, "ground_truth": 0.0, "llm_prompt": 0.0, "throughput": 0.0}
    assert (relu["review"]["base_score"], relu["review"]["bonus"]) == (5.0, 0.0)
    assert relu["weight"] == 1.0 and relu["weight_source"] == "default"
    assert [(m["gpu_type"], m["speedup"], m["candidate_ms"], m["reference_ms"], m["harness_version"])
            for m in relu["measurements"]] == [("c500", 4.0, 0.25, 1.0, "1.0"), ("cpu", 2.0, 1.0, 2.0, "1.0")]
    assert gemm["prompt_file"] == f"samples/{gemm['id']}/prompt.txt"
    # every file the manifest names is on disk with its checksum, and SHA256SUMS checks them all
    for row in loaded["rows"]:
        for f in row["files"]:
            content = (folder / f["path"]).read_bytes()
            assert (len(content), hashlib.sha256(content).hexdigest()) == (f["size"], f["sha256"])
    assert (folder / gemm["reference_file"]).read_bytes() == FP16_TORCHCODE
    checked = subprocess.run(["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    info = json.loads((folder / "dataset.json").read_text())
    assert (info["sample_count"], info["weights"]["rule"], info["license"]) == (2, "uniform", "Apache-2.0")
    assert "data_files: manifest.jsonl" in (folder / "README.md").read_text()
    # the archive holds the same files under the dataset's root folder
    with tarfile.open(datasets.archive_path(export)) as tar:
        names = tar.getnames()
        assert f"gpucodeforces-S1/samples/{relu['id']}/cudacode.py" in names
        assert tar.extractfile("gpucodeforces-S1/manifest.jsonl").read() == (folder / "manifest.jsonl").read_bytes()
    entry = AuditEntry.objects.get(action="dataset.exported")
    assert (entry.actor, entry.reason, entry.after["number"], entry.after["archive_sha256"]) == (
        organizer.user, "first release", 1, export.archive_sha256)


def tree_bytes(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_season_state_gives_the_same_bytes_numbered_and_kept(world, season, organizer):
    first = datasets.export_season(season, actor=organizer.user, reason="a test export")
    with translation.override("zh-hans"):  # an organizer reading the site in Chinese exports the same bytes
        second = datasets.export_season(season, actor=organizer.user, reason="a test export")
    assert (first.number, second.number) == (1, 2)
    assert first.archive_sha256 == second.archive_sha256
    assert datasets.archive_path(first).read_bytes() == datasets.archive_path(second).read_bytes()
    assert tree_bytes(datasets.unpacked_path(first)) == tree_bytes(datasets.unpacked_path(second))
    assert datasets.identical_to(second).number == 1
    assert AuditEntry.objects.filter(action="dataset.exported").order_by("pk").last().after["same_content_as"] == 1
    # a change of the season's state (a weight) is a new content; the older exports stay as they were
    weighting.set_sample_weight(world["gemm"].issue, 3, actor=organizer.user, reason="a level-3 fused kernel")
    third = datasets.export_season(season, actor=organizer.user, reason="a test export")
    assert third.number == 3 and third.archive_sha256 != first.archive_sha256
    rows = {r["id"]: r for r in map(json.loads, (datasets.unpacked_path(third) / "manifest.jsonl").read_text().splitlines())}
    assert (rows[world["gemm"].issue.code]["weight"], rows[world["gemm"].issue.code]["weight_source"]) == (3.0, "sample")
    assert datasets.archive_path(first).read_bytes() == datasets.archive_path(second).read_bytes()
    assert DatasetExport.objects.filter(season=season).count() == 3


def test_the_archive_carries_times_of_the_season_state_not_of_the_clock(world, season, organizer):
    export = datasets.export_season(season, actor=organizer.user, reason="a test export")
    as_of = int(export.as_of.timestamp())
    review_times = [s.reviews.order_by("-pk").first().created_at for s in (world["relu"], world["gemm"])]
    assert export.as_of == max(review_times)  # the runs were marked passed with no finish time
    with tarfile.open(datasets.archive_path(export)) as tar:
        assert {m.mtime for m in tar.getmembers()} == {as_of}
        assert {(m.uid, m.gid, m.uname) for m in tar.getmembers()} == {(0, 0, "root")}
    raw = datasets.archive_path(export).read_bytes()
    assert int.from_bytes(raw[4:8], "little") == as_of  # gzip's own header time


def test_a_season_without_accepted_samples_exports_an_empty_dataset(season, organizer):
    export = datasets.export_season(season, actor=organizer.user, reason="a test export")
    folder = datasets.unpacked_path(export)
    assert (export.sample_count, export.as_of) == (0, None)
    assert (folder / "manifest.jsonl").read_bytes() == b""
    assert json.loads((folder / "dataset.json").read_text())["as_of"] is None


def test_a_folder_left_by_an_export_that_never_committed_is_kept_aside(world, season, organizer, export_dir):
    stray = export_dir / "S1" / "v1"
    stray.mkdir(parents=True)
    (stray / "note.txt").write_text("left by a failed export")
    export = datasets.export_season(season, actor=organizer.user, reason="a test export")
    assert export.number == 1 and datasets.archive_path(export).exists()
    orphans = list((export_dir / "S1").glob("v1.orphan-*"))
    assert len(orphans) == 1 and (orphans[0] / "note.txt").read_text() == "left by a failed export"


def test_a_season_code_unsafe_as_a_file_name_gets_a_folder_of_its_own(world, season, organizer, export_dir):
    season.code = "../S1"
    season.save()
    export = datasets.export_season(season, actor=organizer.user, reason="a test export")
    assert datasets.folder_of(export).resolve().parent == (export_dir / f"season-{season.pk}").resolve()


def test_the_harness_version_a_worker_declares_at_start_is_kept_with_the_run(season, alice, agent_and_token,
                                                                              django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    run = submission.runs.order_by("pk").first()
    fleet.start_on_worker(run.pk, agent, run.attempts, worker_name="host-gpu0", harness_version="1.3")
    run.refresh_from_db()
    assert run.harness_version == "1.3"


def test_measured_inputs_in_a_result_win_over_the_source(world, season, organizer):
    run = Run.objects.filter(submission=world["relu"], gpu_type__slug="cpu").get()
    run.result = {**run.result, "inputs": [{"dtype": "bfloat16", "shape": [4, 4]}]}
    run.save(update_fields=["result"])
    export = datasets.export_season(season, actor=organizer.user, reason="a test export")
    rows = {r["id"]: r for r in map(json.loads, (datasets.unpacked_path(export) / "manifest.jsonl").read_text().splitlines())}
    assert rows[world["relu"].issue.code]["inputs"] == [{"dtype": "bfloat16", "shape": [4, 4]}]
    assert rows[world["relu"].issue.code]["inputs_source"] == "run"


@pytest.mark.parametrize("source, expected", [
    ("import torch\nn = 4\ndef get_inputs():\n    return [torch.randn(n, n * 2)]\n", [{"dtype": "float32", "shape": [4, 8]}]),
    ("import torch\ndef get_inputs():\n    return [torch.randint(0, 9, (3,), dtype=torch.int32)]\n",
     [{"dtype": "int32", "shape": [3]}]),
    ("import torch\ndef get_inputs():\n    return [torch.randn(4, dtype=torch.float8_e4m3fn)]\n",
     [{"dtype": "float8_e4m3fn", "shape": [4]}]),
    ("import torch\ndef get_inputs():\n    return [helper()]\n", None),
    ("import torch\ndef get_inputs():\n    return [torch.randn(unknown)]\n", None),
    ("import torch\ndef get_inputs():\n    for i in range(3): pass\n    return []\n", None),
    ("def get_inputs(:\n", None),
])
def test_inputs_are_read_from_the_source_only_where_nothing_is_guessed(source, expected):
    assert input_specs.from_source(source) == expected


def test_a_bundle_path_that_cannot_be_written_safely_refuses_the_export_and_writes_nothing(world, season, organizer,
                                                                                          export_dir):
    world["relu"].files.filter(path="readme.md").update(path="../escape.md")
    with pytest.raises(dataset_export.DatasetExportError, match="escape.md"):
        datasets.export_season(season, actor=organizer.user, reason="a test export")
    assert not DatasetExport.objects.exists() and not export_dir.exists()


def wrong_but_accepted(season, contestant, organizer):
    """The walk-through's sample: its CPU run wrong_answer (outputs scaled by 1.5), accepted by override."""
    issue = submitting.open_issue(season, contestant, title="scaled ReLU", operator="ReLU", level=1)
    submission = submitting.create_submission(contestant, issue, build_bundle(valid_files()))
    Run.objects.filter(submission=submission, gpu_type__slug="cpu").update(
        status=RunStatus.DONE, verdict=Verdict.WRONG_ANSWER, flags=["no_custom_kernel"])
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="the idea is right; the scale is a typo")
    return submission


def manifest_rows(export):
    return [json.loads(line) for line in (datasets.unpacked_path(export) / dataset_export.MANIFEST).read_text().splitlines()]


def test_a_sample_whose_runs_did_not_pass_is_left_out_unless_an_organizer_includes_it_with_a_reason(
        world, season, alice, organizer):
    wrong = wrong_but_accepted(season, alice, organizer)
    code = wrong.issue.code
    export = datasets.export_season(season, actor=organizer.user, reason="a test export")
    assert export.left_out == [{"sample": code, "why": "cpu: wrong_answer"}] and export.included == []
    assert code not in {row["id"] for row in manifest_rows(export)} and export.sample_count == 2
    entry = AuditEntry.objects.filter(action="dataset.exported").latest("created_at")
    assert entry.after["left_out"] == [{"sample": code, "why": "cpu: wrong_answer"}]

    with pytest.raises(dataset_export.DatasetExportError, match="needs a reason"):
        datasets.export_season(season, actor=organizer.user, include=[code.lower()])
    with pytest.raises(dataset_export.DatasetExportError, match=f"{world['relu'].issue.code}: not an accepted sample"):
        datasets.export_season(season, actor=organizer.user, reason="x", include=[world["relu"].issue.code])
    included = datasets.export_season(season, actor=organizer.user, reason="kept for the scaling study",
                                      include=[code])
    assert included.included == [code] and included.left_out == [] and included.sample_count == 3
    row = next(r for r in manifest_rows(included) if r["id"] == code)
    assert row["included_by_organizer"] is True
    assert {"gpu_type": "cpu", "verdict": "wrong_answer", "flags": ["no_custom_kernel"]} in row["verdicts"]
    assert row["review"]["accepted_by_override"] is True
    assert row["review"]["acceptance_override"] == "the idea is right; the scale is a typo"


def test_every_sample_says_its_verdict_on_each_gpu_type_and_its_overrides(world, season, organizer):
    rows = {r["id"]: r for r in manifest_rows(datasets.export_season(season, actor=organizer.user, reason="a test export"))}
    relu = rows[world["relu"].issue.code]
    assert [(v["gpu_type"], v["verdict"]) for v in relu["verdicts"]] == [("c500", "passed"), ("cpu", "passed")]
    gemm = rows[world["gemm"].issue.code]  # judged on the CPU; its C500 run still waits: no verdict yet
    assert [(v["gpu_type"], v["verdict"]) for v in gemm["verdicts"]] == [("c500", None), ("cpu", "passed")]
    assert all(r["included_by_organizer"] is False for r in rows.values())
    assert relu["review"]["points_override"] == "test data: fixed points"
