"""The hardware page compares two GPUs from real runs: judged runs on two GPU types and a benchmark run
uploaded through POST /api/v1/benchmark-runs (Django's test client, a real personal token)."""
import math
import re

import pytest

from leaderboard import selectors
from submissions.models import BenchmarkRun
from submissions.services import accounts
from tests.judged_data import accepted_sample


def _upload(client, contestant, gpu_name, rows):
    """A benchmark run of season S1's dataset from `gpu_name`: rows (code, weight, status, candidate ms)."""
    _, token = accounts.create_api_token(contestant)
    samples = [{"id": code, "title": f"sample {code}", "weight": weight, "status": status, "flags": [],
                "reference_ms": 2.0, "candidate_ms": ms, "speedup": 2.0 / ms if ms else None}
               for code, weight, status, ms in rows]
    body = {"schema": 1, "complete": True,
            "dataset": {"name": "gpucodeforces-S1", "season": "S1", "checksum": "cd" * 32, "sample_count": len(rows)},
            "device": {"kind": "cuda", "name": gpu_name}, "harness_version": "1.0", "scores": {"baseline": None},
            "samples": samples}
    answer = client.post("/api/v1/benchmark-runs", data=body, content_type="application/json",
                         headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 201, answer.content
    return BenchmarkRun.objects.get(pk=answer.json()["id"])


@pytest.fixture
def judged(season, alice, bob, organizer):
    """Three accepted samples: two judged on both GPU types, one on the CPU only."""
    one = accepted_sample(season, alice, organizer, {"cpu": (1.5, 2.0), "c500": (6.0, 0.5)}, title="GELU")
    two = accepted_sample(season, bob, organizer, {"cpu": (2.0, 4.0), "c500": (4.0, 2.0)}, title="Softmax")
    three = accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)}, title="ReLU")
    return one, two, three


def test_judged_gpus_compare_sample_by_sample(judged):
    one, two, three = judged
    season = one.issue.season
    comparison = selectors.gpu_comparison(season)
    # the two with the most timed samples: the CPU (three) first, the C500 (two)
    assert (comparison["a"].key, comparison["b"].key) == ("cpu", "c500")
    assert [(r["sample"], r["a_ms"], r["b_ms"], r["ratio"]) for r in comparison["rows"]] == sorted(
        [(one.issue.code, 2.0, 0.5, 0.25), (two.issue.code, 4.0, 2.0, 0.5)])
    cpu_run = one.runs.get(gpu_type__slug="cpu")
    row = next(r for r in comparison["rows"] if r["sample"] == one.issue.code)
    assert row["a_source"] == {"kind": "judged", "run": cpu_run.pk}
    assert comparison["ratio_geomean"] == pytest.approx(math.sqrt(0.25 * 0.5))
    scores = {g.key: g.score for g in comparison["gpus"]}
    assert scores["cpu"] == pytest.approx((1.5 * 2.0 * 3.0) ** (1 / 3)) and scores["c500"] == pytest.approx(math.sqrt(24))
    # the roofline from the runs' metrics and the peaks the agent reported (tests/judged_data.py: 67 TFLOP/s)
    roof = next(g for g in comparison["gpus"] if g.key == "c500").roofline
    tflops = sorted(2.0e9 / (ms * 1e9) for ms in (0.5, 2.0))
    assert roof["samples"] == 2 and roof["tflops"] == pytest.approx(sum(tflops) / 2)
    assert roof["tflops_pct"] == pytest.approx(100 * roof["tflops"] / 67.0) and roof["peak_gbps"] == 3352.0
    assert any("No benchmark run" in line for line in comparison["missing"])


def test_a_benchmark_run_is_a_gpu_to_compare_with(client, judged, alice):
    one, two, three = judged
    run = _upload(client, alice, "NVIDIA H100 80GB HBM3", [
        (one.issue.code, 2.0, "passed", 0.1), (two.issue.code, 1.0, "passed", 1.0),
        (three.issue.code, 3.0, "wrong_answer", None)])
    comparison = selectors.gpu_comparison(one.issue.season, "cpu", "NVIDIA H100 80GB HBM3")
    assert [(r["sample"], r["ratio"], r["b_source"]) for r in comparison["rows"]] == sorted([
        (one.issue.code, 0.1 / 2.0, {"kind": "benchmark", "run": run.pk}),
        (two.issue.code, 1.0 / 4.0, {"kind": "benchmark", "run": run.pk})])
    h100 = comparison["b"]
    # the score is the one the site computed from the uploaded rows, not the page's own
    assert h100.source == "benchmark" and h100.score == run.speedup_score
    assert h100.score == pytest.approx(math.exp((2 * math.log(20.0) + math.log(2.0)) / 3))
    assert h100.roofline is None and not any("No benchmark run" in line for line in comparison["missing"])


def test_the_json_twin_has_the_rows_and_scores(client, judged, alice):
    one, two, three = judged
    run = _upload(client, alice, "NVIDIA H100", [(one.issue.code, 1.0, "passed", 0.4), (two.issue.code, 1.0, "passed", 1.6)])
    body = client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "c500", "b": "NVIDIA H100"}).json()
    assert (body["a"], body["b"]) == ("c500", "NVIDIA H100")
    for row in body["rows"]:
        assert row["ratio"] == pytest.approx(row["b_ms"] / row["a_ms"])
    assert {r["sample"]: (r["a_ms"], r["b_ms"]) for r in body["rows"]} == {one.issue.code: (0.5, 0.4),
                                                                           two.issue.code: (2.0, 1.6)}
    assert body["ratio_geomean"] == pytest.approx(0.8)
    gpus = {g["key"]: g for g in body["gpus"]}
    assert gpus["NVIDIA H100"]["benchmark_run"] == run.pk and gpus["NVIDIA H100"]["source"] == "benchmark"
    assert gpus["NVIDIA H100"]["score"] == pytest.approx(run.speedup_score)
    assert gpus["cpu"]["samples"] == 3 and gpus["cpu"]["roofline"]["samples"] == 3
    bad = client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "tpu"})
    assert bad.status_code == 422 and "'tpu'" in bad.json()["detail"] and "cpu" in bad.json()["detail"]
    assert [error["msg"] for error in bad.json()["errors"]] == [bad.json()["detail"]]  # the documented 422
    assert client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "cpu", "b": "cpu"}).status_code == 422
    assert client.get("/api/v1/seasons/S9/hardware/comparison").status_code == 404


def test_the_page_shows_the_scatter_the_table_and_says_what_is_wrong(client, judged, alice):
    one, two, three = judged
    _upload(client, alice, "NVIDIA H100", [(one.issue.code, 1.0, "passed", 0.4)])
    html = client.get("/seasons/S1/hardware/?a=cpu&b=NVIDIA+H100").content.decode()
    assert 'data-figure="figure-hardware-ratios"' in html and 'id="ratio-table"' in html
    table = html[html.index('id="ratio-table"'):html.index("</table>", html.index('id="ratio-table"'))]
    assert f'data-sample="{one.issue.code}"' in table and "0.200" in table and "benchmark run #" in table
    assert "candidate" in html[html.index('id="gpu-comparison"'):]  # the page says which times
    assert 'id="gpu-scores"' in html and 'data-figure="figure-hardware-roofline"' in html
    bad = client.get("/seasons/S1/hardware/?a=tpu&b=cpu")
    assert bad.status_code == 400
    assert re.search(r'id="comparison-error">a: no GPU of this season is called &#x27;tpu&#x27;', bad.content.decode())


def test_empty_states_say_what_is_missing(client, season, alice, organizer):
    html = client.get("/seasons/S1/hardware/").content.decode()
    assert "No GPU has timed samples yet" in html and "No benchmark run has been uploaded" in html
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    html = client.get("/seasons/S1/hardware/").content.decode()
    assert "Only CPU has timed samples: a comparison needs a second GPU." in html
    assert 'id="ratio-table"' not in html
    zh = client.get("/seasons/S1/hardware/", headers={"Accept-Language": "zh-CN"}).content.decode()
    assert "两块 GPU 对比" in zh
