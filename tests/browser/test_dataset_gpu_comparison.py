"""The offline benchmark's screenshot: a season whose GPU figures come only from two benchmark runs, each a
`profiler_agent bench --json` result uploaded by `profiler_agent bench-upload` (its own process, real
HTTP), compared on the hardware page in Chromium.

By default the season is seeded by `manage.py seed_gpu_dataset_season` from small bundles, and the two
results are made here from its exported manifest with the agent's own row and score functions.
With BENCH_RESULTS_DIR=folder, its bench-*.json files (two: the H100's and the H200's, run by
bench/dataset/score_gpu.sh) are uploaded instead, into a season of the code they name.

The comparison section is saved to DATASET_SCREENSHOT (default test-artifacts/dataset-h100-h200.png),
the whole page beside it (-page.png), and the per-sample ratios and weighted scores, read back from
the page's JSON twin, as a markdown table (.md) for docs/dataset.md:

    BENCH_RESULTS_DIR=bench/results/dataset DATASET_SCREENSHOT=docs/screenshots/dataset-h100-h200.png \\
        pytest -q tests/browser/test_dataset_gpu_comparison.py -p no:cacheprovider
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from django.core.management import call_command

from profiler_agent.benchmark import run as bench_run, score
from submissions.models import BenchmarkRun, DatasetExport, GpuType, Season
from submissions.services import accounts, dataset_seeding
from tests.browser.conftest import ARTIFACTS, ROOT
from tests.browser.test_public_pages import assert_charts_drawn

pytestmark = pytest.mark.django_db(transaction=True)
RESULTS_DIR = os.environ.get("BENCH_RESULTS_DIR")
SCREENSHOT = Path(os.environ.get("DATASET_SCREENSHOT") or ARTIFACTS / "dataset-h100-h200.png")
PLAN = ROOT / "bench" / "fixtures" / "dataset_season.json"
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
# (bundle name, category, reference forward, candidate forward): torch-only, nothing to build
BUNDLES = [("softmax", "reduction", "torch.softmax(x, dim=-1)", "torch.exp(x - torch.logsumexp(x, -1, keepdim=True))"),
           ("matmul-relu", "gemm", "torch.relu(x @ x.T)", "torch.clamp_min(x @ x.T, 0)"),
           ("gelu", "elementwise", "torch.nn.functional.gelu(x)", "0.5 * x * (1 + torch.erf(x / 2 ** 0.5))")]
# candidate ms per bundle folder: H100, then H200 (None: not passed there)
TIMES = {"relu-cpu": (0.050, 0.041), "softmax": (0.120, 0.093), "matmul-relu": (0.400, 0.352), "gelu": (0.060, None)}
BUNDLE_CODE = """import torch


class {name}(torch.nn.Module):
    def forward(self, x):
        return {body}
{inputs}"""
INPUTS = """

def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
"""


def _bundles(folder):
    for name, category, reference, candidate in BUNDLES:
        (folder / name).mkdir(parents=True)
        (folder / name / "torchcode.py").write_text(BUNDLE_CODE.format(name="Model", body=reference, inputs=INPUTS))
        (folder / name / "cudacode.py").write_text(BUNDLE_CODE.format(name="ModelNew", body=candidate, inputs=""))
        yield {"bundle": str(folder / name), "operator": name, "category": category, "level": 1}


def _bench_result(dataset, samples, device_name, column):
    """What `bench --json` writes, made from the exported manifest: judged rows scored by the agent's functions."""
    rows = []
    for sample in samples:
        candidate_ms = TIMES[sample["title"].rsplit("(", 1)[1].rstrip(")")][column]
        judged = {"id": sample["id"], "judged_at": "2026-11-25T00:00:00Z",
                  "status": "passed" if candidate_ms else "wrong_answer", "reason": None if candidate_ms else "mismatch",
                  "flags": [], "reference_ms": 0.2, "candidate_ms": candidate_ms,
                  "speedup": 0.2 / candidate_ms if candidate_ms else None, "device_name": device_name,
                  "result": {"logs": {"stderr": "kept on the GPU machine"}}}
        rows.append(bench_run.scored_row(sample, judged, None))
    return {"schema": 1, "complete": True, "dataset": dataset, "device": {"kind": "cuda", "name": device_name},
            "harness_version": "1.0", "agent_version": "0.1.0", "state_file": "/tmp/x.state.jsonl",
            "scores": score.summarize(rows, None), "samples": rows}


def _seeded_season_and_results(settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    plan = json.loads(PLAN.read_text())
    plan["samples"] = [{"bundle": "examples/relu-cpu", "operator": "ReLU", "category": "elementwise", "level": 1},
                       *_bundles(tmp_path / "bundles")]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    call_command("seed_gpu_dataset_season", "--bundles-file", str(tmp_path / "plan.json"),
                 "--export-to", str(tmp_path / "export"))
    export = DatasetExport.objects.get()
    folder = tmp_path / "export" / "gpucodeforces-DS1"
    samples = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    info = json.loads((folder / "dataset.json").read_text())
    dataset = {"name": info["name"], "season": "DS1", "as_of": info["as_of"], "checksum": export.manifest_sha256,
               "sample_count": len(samples)}
    files = []
    for column, (gpu, name) in enumerate((("h100", H100), ("h200", H200))):
        files.append(tmp_path / f"bench-{gpu}.json")
        files[-1].write_text(json.dumps(_bench_result(dataset, samples, name, column), indent=2))
    return export.season, files


def _season_for(files):
    """The season the uploaded results name (their dataset's season code), with the plan's name and GPU types."""
    results = [json.loads(f.read_text()) for f in files]
    assert len({r["dataset"]["checksum"] for r in results}) == 1, "the two results are of different datasets"
    plan = dataset_seeding.read_plan(PLAN, season_code=results[0]["dataset"]["season"])
    season = Season.objects.create(second_judging="off", code=plan.season_code, name=plan.season_name, description=plan.season_description)
    season.gpu_types.add(*(GpuType.objects.create(slug=slug, name=name) for slug, name in plan.gpu_types))
    return season


def bench_upload(path, site, token):
    done = subprocess.run([sys.executable, "-m", "profiler_agent", "bench-upload", str(path), "--site", site,
                           f"--token={token}"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def expected_rows(first, second):
    """Per sample passed on both, (id, ms on the first, ms on the second, ratio, weight), from the files alone."""
    a = {r["id"]: r for r in first["samples"] if r["status"] == "passed" and r["candidate_ms"]}
    b = {r["id"]: r for r in second["samples"] if r["status"] == "passed" and r["candidate_ms"]}
    return [(code, a[code]["candidate_ms"], b[code]["candidate_ms"], b[code]["candidate_ms"] / a[code]["candidate_ms"],
             a[code]["weight"]) for code in sorted(set(a) & set(b))]


def _markdown(api, results):
    names = {g["key"]: g["gpu_name"] for g in api["gpus"]}
    a, b = names[api["a"]], names[api["b"]]
    lines = [f"| sample | title | weight | {a} ms | {b} ms | ratio {b} / {a} |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| {r['sample']} | {r['title']} | {r['weight']:g} | {r['a_ms']:.4f} | {r['b_ms']:.4f} | {r['ratio']:.3f} |"
              for r in api["rows"]]
    lines += ["", f"Weighted geometric mean of the ratios over {len(api['rows'])} samples: **{api['ratio_geomean']:.3f}**", "",
              "| GPU | measured by | benchmark run | passed samples | weighted geomean speedup |",
              "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {g['gpu_name']} | {g['uploaded_by']} | #{g['benchmark_run']} | {g['samples']} | {g['score']:.3f} |"
              for g in api["gpus"] if g["source"] == "benchmark"]
    not_passed = [f"{r['id']} ({r['status']} on {result['device']['name']})"
                  for result in results for r in result["samples"] if r["status"] != "passed"]
    lines += ["", f"Not passed, left out: {', '.join(not_passed) or 'none'}."]
    return "\n".join(lines) + "\n"


def test_two_uploaded_benchmark_runs_compared(live_server, page, settings, tmp_path, queue_prefix):
    if RESULTS_DIR:
        files = sorted(Path(RESULTS_DIR).glob("bench-*.json"))
        assert len(files) == 2, f"{RESULTS_DIR} holds {len(files)} bench-*.json files, not two"
        season = _season_for(files)
    else:
        season, files = _seeded_season_and_results(settings, tmp_path)
    _, token = accounts.create_api_token(accounts.register_contestant("bencher", "pw-bencher-123", display_name="Bencher"))
    for path in files:
        assert bench_upload(path, live_server.url, token).startswith("uploaded: benchmark run ")
    runs = list(BenchmarkRun.objects.filter(season=season).order_by("pk"))
    assert len(runs) == 2 and all(r.sample_count == len(r.samples) for r in runs)
    a, b = runs[0].comparison_key, runs[1].comparison_key  # each GPU's series: the uploader's, from that GPU
    a_name, b_name = (f"{r.gpu_name}, measured by Bencher, uploaded" for r in runs)
    results = [json.loads(f.read_text()) for f in files]
    expected = expected_rows(*results)
    assert expected, "the two runs have no passed sample in common"

    page.goto(f"{live_server.url}/seasons/{season.code}/hardware/?a={quote(a)}&b={quote(b)}")
    section = page.locator("#gpu-comparison")
    assert page.locator("select[name=a] option:checked").inner_text().startswith(
        f"{a_name} (benchmark run #{runs[0].pk}")
    assert page.locator("select[name=b] option:checked").inner_text().startswith(
        f"{b_name} (benchmark run #{runs[1].pk}")
    table = page.locator("#ratio-table tbody tr")
    assert [row.get_attribute("data-sample") for row in table.all()] == [code for code, *_ in expected]
    for code, a_ms, b_ms, ratio, _weight in expected:
        cells = page.locator(f"#ratio-table tr[data-sample='{code}'] td").all_inner_texts()
        assert cells[1:4] == [f"{a_ms:.4f}", f"{b_ms:.4f}", f"{ratio:.3f}"], code
    geomean = math.exp(sum(w * math.log(r) for *_, r, w in expected) / sum(w for *_, w in expected))
    assert f"takes {geomean:.3f}× the time of {a_name}" in page.locator("#ratio-summary").inner_text()
    assert_charts_drawn(page, 1)
    # no judged run has a speedup: no empty heatmap above the comparison, the table says what each GPU type shows
    assert page.locator("[data-figure='figure-hardware-matrix']").count() == 0
    scatter = page.locator("[data-figure='figure-hardware-ratios']")
    assert scatter.locator(".scatterlayer .trace").first.locator("path.point").count() == len(expected)
    for run in runs:  # the site's own scores, computed again from the uploaded rows
        assert f"{run.speedup_score:.3f}×" in page.locator(f"#uploaded-scores tr[data-gpu='{run.comparison_key}']").inner_text()
    for run, result in zip(runs, results):  # each GPU on the roofline from the throughput its rows carry
        measured = [s["result"]["metrics"]["bandwidth_gbs"] for s in result["samples"]
                    if s["status"] == "passed" and ((s.get("result") or {}).get("metrics") or {}).get("bandwidth_gbs")]
        roof = page.locator(f"#gpu-roofline tr[data-gpu='{run.comparison_key}']").inner_text()
        assert ("no throughput figures" in roof) == (not measured), roof
        if measured:
            median = sorted(measured)[len(measured) // 2] if len(measured) % 2 else None
            assert median is None or f"{median:.0f}" in roof.replace(",", ""), roof
    if not RESULTS_DIR:  # the made-up times: H200 faster by 0.82, 0.775, 0.88 with weights 1, 1.5 and 2
        assert sorted((round(r, 4), w) for *_, r, w in expected) == [(0.775, 1.5), (0.82, 1.0), (0.88, 2.0)]
    assert page.console_errors == []

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(SCREENSHOT))
    page.screenshot(path=str(SCREENSHOT.with_name(SCREENSHOT.stem + "-page.png")), full_page=True)
    api = page.request.get(f"{live_server.url}/api/v1/seasons/{season.code}/hardware/comparison?a={quote(a)}&b={quote(b)}")
    assert api.ok
    answer = api.json()
    assert [r["sample"] for r in answer["rows"]] == [code for code, *_ in expected]
    assert answer["ratio_geomean"] == pytest.approx(geomean)
    SCREENSHOT.with_suffix(".md").write_text(_markdown(answer, results))
