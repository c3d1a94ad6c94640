"""`manage.py seed_gpu_dataset_season`: a GPU benchmark season seeded from bundle folders, each sample
accepted with the organizer's override (audited), its runs cancelled out of the real Redis, the dataset
exported and copied out, readable by the agent's own dataset reader; a second run and a missing bundle
are refused with nothing written."""
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from profiler_agent.benchmark.dataset import open_dataset  # the reader `profiler_agent bench` uses
from submissions import queueing
from submissions.models import AuditEntry, DatasetExport, GpuType, Issue, Run, Season, Submission, Verdict
from submissions.services import accounts, dataset_seeding

ROOT = Path(__file__).resolve().parents[2]
REASON = "seeded for the GPU benchmark dataset; judged by `profiler_agent bench` on each GPU"
SOFTMAX_REFERENCE = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""
SOFTMAX_CANDIDATE = """import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
"""
CATEGORIES = {"elementwise", "reduction", "gemm", "convolution", "attention", "backward"}


@pytest.fixture
def export_dir(settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    return settings.DATASET_EXPORT_DIR


@pytest.fixture
def plan_file(tmp_path):
    """Two small bundles: examples/relu-cpu (by its repository path) and a softmax folder made here."""
    softmax = tmp_path / "bundles" / "softmax"
    softmax.mkdir(parents=True)
    (softmax / "torchcode.py").write_text(SOFTMAX_REFERENCE)
    (softmax / "cudacode.py").write_text(SOFTMAX_CANDIDATE)
    (softmax / "__pycache__").mkdir()
    (softmax / "__pycache__" / "torchcode.cpython-311.pyc").write_bytes(b"\0\1")  # left out, as uploads leave it
    plan = json.loads((ROOT / "bench" / "fixtures" / "dataset_season.json").read_text())
    plan["samples"] = [
        {"_comment": "a comment line"},
        {"bundle": "examples/relu-cpu", "operator": "ReLU", "category": "Elementwise", "level": 1, "author": "ds-team"},
        {"bundle": str(softmax), "operator": "Row softmax", "category": "reduction", "level": 2,
         "author": "examples-team", "_comment": "an absolute path"},
    ]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def seed(*args):
    call_command("seed_gpu_dataset_season", *map(str, args))


@pytest.mark.django_db(transaction=True)
def test_a_season_is_seeded_accepted_and_exported(plan_file, export_dir, tmp_path, capsys):
    out_dir = tmp_path / "out"
    seed("--bundles-file", plan_file, "--export-to", out_dir)
    printed = capsys.readouterr().out

    season = Season.objects.get(code="DS1")
    assert sorted(season.gpu_types.values_list("slug", flat=True)) == ["h100", "h200"]
    assert season.dataset_weight_rule == "operator"
    issues = {i.operator: i for i in Issue.objects.filter(season=season)}
    assert set(issues) == {"elementwise", "reduction"}  # the category is the operator rule's key, normalized
    relu, softmax = issues["elementwise"], issues["reduction"]
    assert (relu.title, relu.level, relu.framework, relu.author.user.username) == (
        "ReLU (relu-cpu)", 1, "pytorch", "ds-team")
    assert (softmax.title, softmax.level, softmax.author.display_name) == (
        "Row softmax (softmax)", 2, "GPU CodeForces examples")
    assert not softmax.author.user.has_usable_password()
    assert sorted(Submission.objects.get(issue=softmax).files.values_list("path", flat=True)) == [
        "cudacode.py", "torchcode.py"]

    for issue in (relu, softmax):
        submission = Submission.objects.get(issue=issue)
        review = submission.reviews.get()
        assert (review.decision, review.acceptance_override, review.reviewer.username) == (
            "accepted", REASON, "dataset-organizer")
        runs = Run.objects.filter(submission=submission)
        assert sorted(r.gpu_type.slug for r in runs) == ["h100", "h200"]
        assert all(r.verdict == Verdict.CANCELLED for r in runs)
        overridden = AuditEntry.objects.get(action="review.acceptance_overridden", object_id=str(submission.pk))
        assert overridden.reason == REASON and overridden.before["runs"] == {"h100": "cancelled", "h200": "cancelled"}
        assert AuditEntry.objects.filter(action="run.cancelled", reason=REASON,
                                         object_id__in=[str(r.pk) for r in runs]).count() == 2
    for gpu in GpuType.objects.all():  # nothing left queued for agents that will never come
        assert queueing.queue_length(gpu.queue_name) == 0
    seeded = AuditEntry.objects.get(action="season.seeded")
    assert [s["bundle"] for s in seeded.after["samples"]] == ["examples/relu-cpu", str(plan_file.parent / "bundles/softmax")]

    export = DatasetExport.objects.get(season=season)
    assert export.number == 1 and export.sample_count == 2
    dataset = open_dataset(out_dir / "gpucodeforces-DS1", tmp_path / "scratch")  # checksums checked
    assert dataset.checksum == export.manifest_sha256
    rows = {r["id"]: r for r in dataset.samples}
    assert (rows[relu.code]["weight"], rows[softmax.code]["weight"]) == (1.0, 1.5)  # the plan's category weights
    assert (rows[relu.code]["operator"], rows[softmax.code]["level"]) == ("elementwise", 2)
    assert rows[softmax.code]["candidate_file"] == f"samples/{softmax.code}/cudacode.py"
    assert (out_dir / "gpucodeforces-DS1.tar.gz").read_bytes() == (
        export_dir / "DS1" / "v1" / "gpucodeforces-DS1.tar.gz").read_bytes()
    assert f"{relu.code}  elementwise  level 1  weight 1    submission #" in printed
    assert "categories: elementwise 1, reduction 1" in printed and "dataset v1: 2 samples" in printed

    # a second run is refused, naming the season, and changes nothing
    before = (Issue.objects.count(), Submission.objects.count(), AuditEntry.objects.count(), DatasetExport.objects.count())
    with pytest.raises(CommandError, match="season DS1 exists already \\(2 issues, 1 dataset exports\\)"):
        seed("--bundles-file", plan_file, "--export-to", tmp_path / "elsewhere")
    (out_dir / "gpucodeforces-DS2").mkdir()  # a folder of the same name, never overwritten
    with pytest.raises(CommandError, match="gpucodeforces-DS2 exists already: choose another --export-to"):
        seed("--bundles-file", plan_file, "--export-to", out_dir, "--season-code", "DS2")
    assert before == (Issue.objects.count(), Submission.objects.count(), AuditEntry.objects.count(),
                      DatasetExport.objects.count())
    assert not Season.objects.filter(code="DS2").exists()

    # another code seeds another season from the same bundles
    seed("--bundles-file", plan_file, "--season-code", "DS2")
    assert Issue.objects.filter(season__code="DS2").count() == 2


@pytest.mark.django_db(transaction=True)
def test_missing_or_invalid_bundles_are_named_and_nothing_is_written(plan_file, export_dir, tmp_path):
    plan = json.loads(plan_file.read_text())
    plan["samples"] += [{"bundle": "bench/fixtures/bundles/ds-nowhere", "operator": "x", "category": "gemm", "level": 1},
                        {"bundle": "bench/fixtures/bundles/ds-nothing", "operator": "y", "category": "gemm", "level": 1}]
    plan_file.write_text(json.dumps(plan))
    with pytest.raises(CommandError, match="2 bundle folder\\(s\\) listed in .*plan.json are missing: "
                                           "bench/fixtures/bundles/ds-nowhere, bench/fixtures/bundles/ds-nothing; nothing was created"):
        seed("--bundles-file", plan_file)

    plan["samples"] = plan["samples"][:3]
    softmax_sample = next(s for s in plan["samples"] if s.get("operator") == "Row softmax")
    softmax = tmp_path / "bundles" / "softmax"  # made by the fixture, never a folder of the repository
    assert Path(softmax_sample["bundle"]) == softmax
    plan_file.write_text(json.dumps(plan))
    (softmax / "cudacode.py").unlink()
    with pytest.raises(CommandError, match="softmax is not a valid bundle: the bundle has no candidate"):
        seed("--bundles-file", plan_file)

    (softmax / "cudacode.py").write_text(SOFTMAX_CANDIDATE)
    softmax_sample["level"] = 5
    plan_file.write_text(json.dumps(plan))
    with pytest.raises(CommandError, match="\"level\" must be 1, 2, 3 or 4, not 5"):
        seed("--bundles-file", plan_file)

    # refused inside the transaction: the accounts made before it are rolled back with everything else
    softmax_sample["level"] = 2
    plan_file.write_text(json.dumps(plan))
    accounts.register_contestant("examples-team", "pw-examples-1", accepts_agreement=False)
    with pytest.raises(CommandError, match="softmax: accept the contest agreement"):  # the second sample
        seed("--bundles-file", plan_file)
    assert not get_user_model().objects.filter(username__in=["ds-team", "dataset-organizer"]).exists()
    assert not Season.objects.exists() and not Issue.objects.exists() and not AuditEntry.objects.filter(
        action__in=["review.accepted", "run.cancelled"]).exists()

    accounts.register_contestant("dataset-organizer", "pw-not-staff-1")
    with pytest.raises(CommandError, match="user 'dataset-organizer' exists and is not staff"):
        seed("--bundles-file", plan_file)
    assert not Season.objects.exists() and not Issue.objects.exists() and not export_dir.exists()


def test_the_repositorys_plan_spans_the_categories_of_issue_11():
    plan = dataset_seeding.read_plan(ROOT / "bench" / "fixtures" / "dataset_season.json")
    assert len(plan.samples) >= 12 and set(plan.categories()) == CATEGORIES
    assert [slug for slug, _ in plan.gpu_types] == ["h100", "h200"]
    assert plan.weight_rule == "operator" and set(plan.weight_settings["weights"]) == CATEGORIES
    # every folder it lists is a valid bundle, but those still being written (bench/fixtures/bundles/ds-*)
    missing = plan.missing_bundles()
    assert all(name.startswith("bench/fixtures/bundles/ds-") for name in missing)
    for sample in plan.samples:
        if sample.bundle not in missing:
            dataset_seeding.read_bundle(sample)
