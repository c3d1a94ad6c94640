"""The dataset in one line: a season's accepted samples exported to disk, the manifest loaded by
pyarrow in a fresh process, `python -m profiler_agent bench` run on the export (CPU, its own process),
its `--upload` sent over real HTTP, and the season's hardware page showing the benchmark run."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from submissions.models import BenchmarkRun, DatasetExport
from submissions.services import accounts
from tests.site.test_seed_gpu_dataset_season import SOFTMAX_REFERENCE

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "bench" / "fixtures" / "dataset_season.json"
# torch-only samples (nothing to build) of one reference: a candidate that passes, one that computes something else
CANDIDATES = {"softmax": "torch.exp(x - torch.logsumexp(x, -1, keepdim=True))", "softmax-wrong": "torch.exp(x)"}
CANDIDATE = """import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return {body}
"""
LOAD_WITH_PYARROW = """import json, sys
import pyarrow.json as pj
table = pj.read_json(sys.argv[1])
print(json.dumps({"rows": table.num_rows, "ids": table.column("id").to_pylist(),
                  "weights": table.column("weight").to_pylist()}))
"""


def _plan(tmp_path):
    plan = json.loads(PLAN.read_text())
    plan["samples"] = []
    for name, body in CANDIDATES.items():
        folder = tmp_path / "bundles" / name
        folder.mkdir(parents=True)
        (folder / "torchcode.py").write_text(SOFTMAX_REFERENCE)
        (folder / "cudacode.py").write_text(CANDIDATE.format(body=body))
        plan["samples"].append({"bundle": str(folder), "operator": name, "category": "reduction", "level": 1})
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    return tmp_path / "plan.json"


def test_export_load_bench_upload_and_the_hardware_page(live_server, client, settings, tmp_path, queue_prefix):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    call_command("seed_gpu_dataset_season", "--bundles-file", str(_plan(tmp_path)), "--export-to",
                 str(tmp_path / "export"))
    export = DatasetExport.objects.get()
    folder = tmp_path / "export" / "gpucodeforces-DS1"

    loaded = subprocess.run([sys.executable, "-c", LOAD_WITH_PYARROW, str(folder / "manifest.jsonl")],
                            capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    manifest = json.loads(loaded.stdout)
    assert manifest["rows"] == 2 and manifest["weights"] == [1.5, 1.5]  # the plan's `reduction` weight

    _, token = accounts.create_api_token(accounts.register_contestant("bencher", "pw-bencher-123", display_name="B"))
    result_file = tmp_path / "bench-cpu.json"
    bench = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "bench", str(folder), "--device", "cpu", "--timing-budget", "0.3",
         "--cache-dir", str(tmp_path / "builds"), "--json", str(result_file), "--upload", live_server.url,
         f"--token={token}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    result = json.loads(result_file.read_text())
    verdicts = {row["id"]: row["status"] for row in result["samples"]}
    wrong = next(issue.code for issue in export.season.issues.all() if issue.title.endswith("(softmax-wrong)"))
    assert set(verdicts) == set(manifest["ids"]) and verdicts[wrong] == "wrong_answer"
    assert [status for code, status in verdicts.items() if code != wrong] == ["passed"]

    run = BenchmarkRun.objects.get()
    assert (run.season, run.dataset_export, run.passed_count, run.sample_count) == (export.season, export, 1, 2)
    assert f"uploaded: benchmark run {run.pk}" in bench.stdout
    page = client.get(f"/seasons/{export.season.code}/hardware/", {"a": run.comparison_key})
    assert page.status_code == 200
    html = page.content.decode()
    assert f"benchmark run #{run.pk}" in html
    uploads = html[html.index('id="uploaded-scores"'):html.index("</table>", html.index('id="uploaded-scores"'))]
    assert f'data-gpu="{run.comparison_key}"' in uploads and f"{run.speedup_score:.3f}×" in uploads
