"""The hardware page compares two GPUs from real runs: judged runs on two GPU types and a benchmark run
uploaded through POST /api/v1/benchmark-runs (Django's test client, a real personal token)."""
import math
import re

import pytest

from leaderboard import gpu_comparison
from submissions.models import BenchmarkRun, GpuType
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
    comparison = gpu_comparison.gpu_comparison(season)
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
    assert comparison["bench_command"] == "PROFILER_AGENT_USER_TOKEN=TOKEN python -m profiler_agent bench DATASET --upload SITE"


def test_a_benchmark_run_is_a_gpu_to_compare_with(client, judged, alice):
    one, two, three = judged
    run = _upload(client, alice, "NVIDIA H100 80GB HBM3", [
        (one.issue.code, 2.0, "passed", 0.1), (two.issue.code, 1.0, "passed", 1.0),
        (three.issue.code, 3.0, "wrong_answer", None)])
    comparison = gpu_comparison.gpu_comparison(one.issue.season, "cpu", run.comparison_key)
    assert [(r["sample"], r["ratio"], r["b_source"]) for r in comparison["rows"]] == sorted([
        (one.issue.code, 0.1 / 2.0, {"kind": "benchmark", "run": run.pk}),
        (two.issue.code, 1.0 / 4.0, {"kind": "benchmark", "run": run.pk})])
    h100 = comparison["b"]
    # the score is the one the site computed from the uploaded rows, not the page's own
    assert h100.source == "benchmark" and h100.score == run.speedup_score
    assert h100.score == pytest.approx(math.exp((2 * math.log(20.0) + math.log(2.0)) / 3))
    assert h100.roofline is None and comparison["bench_command"] is None


def test_the_json_twin_has_the_rows_and_scores(client, judged, alice):
    one, two, three = judged
    run = _upload(client, alice, "NVIDIA H100", [(one.issue.code, 1.0, "passed", 0.4), (two.issue.code, 1.0, "passed", 1.6)])
    body = client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "c500", "b": run.comparison_key}).json()
    assert (body["a"], body["b"]) == ("c500", f"upload:{alice.pk}:NVIDIA H100")
    for row in body["rows"]:
        assert row["ratio"] == pytest.approx(row["b_ms"] / row["a_ms"])
    assert {r["sample"]: (r["a_ms"], r["b_ms"]) for r in body["rows"]} == {one.issue.code: (0.5, 0.4),
                                                                           two.issue.code: (2.0, 1.6)}
    assert body["ratio_geomean"] == pytest.approx(0.8)
    gpus = {g["key"]: g for g in body["gpus"]}
    h100 = gpus[run.comparison_key]
    assert (h100["benchmark_run"], h100["source"], h100["uploaded_by"]) == (run.pk, "benchmark", "Alice")
    assert h100["score"] == pytest.approx(run.speedup_score)
    assert gpus["cpu"]["samples"] == 3 and gpus["cpu"]["roofline"]["samples"] == 3
    bad = client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "tpu"})
    assert bad.status_code == 422 and "'tpu'" in bad.json()["detail"] and "cpu" in bad.json()["detail"]
    assert [error["msg"] for error in bad.json()["errors"]] == [bad.json()["detail"]]  # the documented 422
    assert client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "cpu", "b": "cpu"}).status_code == 422
    assert client.get("/api/v1/seasons/S9/hardware/comparison").status_code == 404


def test_the_page_shows_the_scatter_the_table_and_says_what_is_wrong(client, judged, alice):
    one, two, three = judged
    run = _upload(client, alice, "NVIDIA H100", [(one.issue.code, 1.0, "passed", 0.4)])
    html = client.get("/seasons/S1/hardware/", {"a": "cpu", "b": run.comparison_key}).content.decode()
    assert 'data-figure="figure-hardware-ratios"' in html and 'id="ratio-table"' in html
    table = html[html.index('id="ratio-table"'):html.index("</table>", html.index('id="ratio-table"'))]
    assert f'data-sample="{one.issue.code}"' in table and "0.200" in table and "benchmark run #" in table
    assert "candidate" in html[html.index('id="gpu-comparison"'):]  # the page says which times
    assert 'id="gpu-scores"' in html and 'id="uploaded-scores"' in html
    assert 'data-figure="figure-hardware-roofline"' in html
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


def _uploaded(body, gpu_name):
    return sorted(((g["uploaded_by"], round(g["score"], 3)) for g in body["gpus"]
                   if g["source"] == "benchmark" and g["gpu_name"] == gpu_name), key=str)


def test_an_ordinary_token_uploading_999x_never_replaces_anothers_honest_figure(client, judged, alice, bob):
    one, two, three = judged
    honest = _upload(client, alice, "NVIDIA H200", [(one.issue.code, 1.0, "passed", 1.0),
                                                   (two.issue.code, 1.0, "passed", 1.0)])  # 2.0x on both
    assert honest.speedup_score == pytest.approx(2.0)
    forged = _upload(client, bob, "NVIDIA H200", [(one.issue.code, 1.0, "passed", 2.0 / 999),
                                                 (two.issue.code, 1.0, "passed", 2.0 / 999)])
    body = client.get("/api/v1/seasons/S1/hardware/comparison").json()
    # two series, each its uploader's: Bob's 999x stands beside Alice's 2.0x, never in its place
    assert sorted(round(g["score"], 3) for g in body["gpus"] if g["source"] == "benchmark") == [2.0, 999.0]
    assert _uploaded(body, "NVIDIA H200") == [("Alice", 2.0), ("Bob", 999.0)]
    keys = {g["uploaded_by"]: g["key"] for g in body["gpus"] if g["source"] == "benchmark"}
    assert keys == {"Alice": honest.comparison_key, "Bob": forged.comparison_key} and len(set(keys.values())) == 2
    alices = next(g for g in body["gpus"] if g["key"] == honest.comparison_key)
    assert alices["name"] == "NVIDIA H200, measured by Alice, uploaded" and alices["benchmark_run"] == honest.pk
    assert alices["dataset_name"] == "gpucodeforces-S1"
    assert alices["uploaded_at"].startswith(str(honest.created_at.date()))
    # a second upload replaces only its own uploader's earlier figure
    _upload(client, alice, "NVIDIA H200", [(one.issue.code, 1.0, "passed", 2.0 / 3)])
    _upload(client, bob, "NVIDIA H200", [(one.issue.code, 1.0, "passed", 0.4)])
    body = client.get("/api/v1/seasons/S1/hardware/comparison").json()
    assert _uploaded(body, "NVIDIA H200") == [("Alice", 3.0), ("Bob", 5.0)]
    # the page says who measured what, apart from the judged GPU types
    html = client.get("/seasons/S1/hardware/").content.decode()
    uploads = html[html.index('id="uploaded-scores"'):html.index("</table>", html.index('id="uploaded-scores"'))]
    rows = re.findall(r"<tr data-gpu=\"(.*?)\">(.*?)</tr>", uploads, re.S)
    assert [(key, re.search(r'class="uploader">(.*?)</td>', row).group(1)) for key, row in rows] == [
        (honest.comparison_key, "Alice"), (forged.comparison_key, "Bob")]
    assert "3.000×" in rows[0][1] and "5.000×" in rows[1][1] and "gpucodeforces-S1" in rows[0][1]
    assert "NVIDIA H200, measured by Bob, uploaded" in html


def test_an_uploaded_h100_never_reads_as_the_judged_h100_type(client, season, alice, bob, organizer):
    season.gpu_types.add(GpuType.objects.create(slug="h100", name="NVIDIA H100"))
    sample = accepted_sample(season, alice, organizer, {"h100": (2.0, 1.0)})
    code = sample.issue.code
    by_name = _upload(client, bob, "NVIDIA H100", [(code, 1.0, "passed", 0.002)])  # 1000x
    by_slug = _upload(client, bob, "h100", [(code, 1.0, "passed", 0.002)])  # the judged type's own slug
    body = client.get("/api/v1/seasons/S1/hardware/comparison").json()
    gpus = {g["key"]: g for g in body["gpus"]}
    # the judged type alone answers to its slug and its name, with its judged figure
    assert [g["key"] for g in body["gpus"] if g["name"] in ("NVIDIA H100", "h100")] == ["h100"]
    assert (gpus["h100"]["source"], gpus["h100"]["score"], gpus["h100"]["uploaded_by"]) == ("judged", 2.0, None)
    for run in (by_name, by_slug):
        uploaded = gpus[run.comparison_key]
        assert uploaded["source"] == "benchmark" and uploaded["uploaded_by"] == "Bob"
        assert uploaded["name"] == f"{run.gpu_name}, measured by Bob, uploaded"
        assert uploaded["score"] == pytest.approx(1000.0) and run.comparison_key not in ("h100", "NVIDIA H100")
    pair = client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "h100", "b": by_name.comparison_key}).json()
    assert [(r["a_ms"], r["b_ms"], r["b_source"]["kind"]) for r in pair["rows"]] == [(1.0, 0.002, "benchmark")]
    assert client.get("/api/v1/seasons/S1/hardware/comparison", {"a": "NVIDIA H100"}).status_code == 422
    # on the page, the judged types' table holds no upload; the uploads' table names the uploader
    html = client.get("/seasons/S1/hardware/").content.decode()
    judged_table = html[html.index('id="gpu-scores"'):html.index("</table>", html.index('id="gpu-scores"'))]
    assert re.findall(r'data-gpu="(.*?)"', judged_table) == ["c500", "cpu", "h100"]
    assert "Bob" not in judged_table and "1000" not in judged_table and "2.000×" in judged_table
    uploads = html[html.index('id="uploaded-scores"'):html.index("</table>", html.index('id="uploaded-scores"'))]
    assert uploads.count("Bob") == 2 and "1000.000×" in uploads


def test_the_json_twin_gives_the_whole_command_to_upload_a_benchmark_run(client, judged):
    body = client.get("/api/v1/seasons/S1/hardware/comparison").json()
    (line,) = [line for line in body["missing"] if "No benchmark run" in line]
    assert "PROFILER_AGENT_USER_TOKEN=TOKEN python -m profiler_agent bench DATASET --upload http://testserver" in line
    assert "`" not in line
