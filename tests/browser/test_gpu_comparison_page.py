"""In Chromium, the hardware page compares two GPUs from real runs: GPU types judged on the season's
samples and a benchmark run uploaded over HTTP by `profiler_agent bench --upload`'s own upload function.
The visitor picks the two GPUs in the form; the ratio scatter (log axes) and its table draw side by side.
Screenshot: test-artifacts/hardware-comparison.png (with SAVE_DOC_SCREENSHOTS=1 also docs/screenshots/)."""
import pytest

from profiler_agent.benchmark import run as bench_run  # no torch: the upload is urllib alone
from submissions.models import BenchmarkRun
from submissions.services import accounts
from tests.browser.test_public_pages import assert_charts_drawn, shoot

pytestmark = pytest.mark.django_db(transaction=True)
GPU = "NVIDIA A100-SXM4-80GB"


def _benchmark_result(samples, candidate_ms):
    rows = [{"id": s.issue.code, "title": s.issue.title, "weight": 1.0, "status": "passed", "reason": None,
             "flags": [], "reference_ms": 1.0, "candidate_ms": ms, "speedup": 1.0 / ms, "baseline_ms": None,
             "relative_time": None, "not_scored": None, "device_name": GPU, "judged_at": "2026-11-24T00:00:00Z"}
            for s, ms in zip(samples, candidate_ms)]
    return {"schema": 1, "complete": True,
            "dataset": {"name": "gpucodeforces-S1", "season": "S1", "checksum": "ef" * 32, "sample_count": len(rows)},
            "device": {"kind": "cuda", "name": GPU}, "harness_version": "1.0", "agent_version": "0.1.0",
            "scores": {"baseline": None}, "samples": rows}


def test_two_gpus_compared_in_the_browser(live_server, page, season_with_results):
    _, samples = season_with_results
    _, token = accounts.create_api_token(accounts.register_contestant("dave", "pw-dave-12345", display_name="Dave"))
    status, answer = bench_run.upload(_benchmark_result(samples, [0.042, 0.5, 2.4, 0.3]), live_server.url, token)
    assert status == 201, answer
    key = BenchmarkRun.objects.get(pk=answer["id"]).comparison_key  # the upload's series: Dave's, from this GPU
    label = f"{GPU}, measured by Dave, uploaded"

    page.goto(f"{live_server.url}/seasons/S1/hardware/")
    section = page.locator("#gpu-comparison")
    assert "No benchmark run" not in section.inner_text()
    page.select_option("select[name=a]", "h100")
    page.select_option("select[name=b]", key)
    with page.expect_navigation():
        page.click("#gpu-comparison button[type=submit]")
    assert_charts_drawn(page, 3)  # the matrix, the ratio scatter, the roofline position
    scatter = page.locator("[data-figure='figure-hardware-ratios']")
    assert scatter.locator(".scatterlayer .trace").first.locator("path.point").count() == 4
    assert scatter.locator(".ytitle").text_content() == f"time ratio {label} / NVIDIA H100"
    assert page.evaluate("document.querySelector(\"[data-figure='figure-hardware-ratios']\").layout.yaxis.type") == "log"
    rows = page.locator("#ratio-table tbody tr")
    assert rows.count() == 4
    gelu = rows.filter(has_text="Fused GELU").locator("td").all_inner_texts()
    assert gelu[1:4] == ["0.0210", "0.0420", "2.000"]  # 0.042 / 0.021
    assert gelu[4].startswith("judged run #") and f"benchmark run #{answer['id']}" in gelu[4]
    # the upload stands in its own table, naming who measured it, never among the judged GPU types
    uploaded = page.locator(f"#uploaded-scores tr[data-gpu='{key}']").inner_text()
    assert f"benchmark run #{answer['id']}" in uploaded and "Dave" in uploaded and GPU in uploaded
    assert page.locator(f"#gpu-scores tr[data-gpu='{key}']").count() == 0
    assert page.locator(f"#gpu-roofline tr[data-gpu='{key}']").inner_text().strip().endswith("no throughput figures")
    # the scatter and the table stand side by side
    chart_box, table_box = scatter.bounding_box(), page.locator("#ratio-table").bounding_box()
    assert table_box["x"] > chart_box["x"] + chart_box["width"] / 2 and abs(table_box["y"] - chart_box["y"]) < 200
    shoot(page, "hardware-comparison")

    page.goto(f"{live_server.url}/seasons/S1/hardware/?a=h100&b=tpu-v9")
    assert "no GPU of this season is called 'tpu-v9'" in page.locator("#comparison-error").inner_text()
    assert page.console_errors == [] or all("400" in e for e in page.console_errors)


BENCH_HINT = {"en-US": ("No benchmark run has been uploaded for this season's dataset yet", "account page"),
              "zh-CN": ("本赛季的数据集还没有上传的基准测试", "账户页面")}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_without_a_benchmark_run_the_page_gives_the_whole_command_to_upload_one(
        live_server, page, season_with_results, language):
    """The walk: "`python -m profiler_agent bench DATASET --upload` adds one.", backticks drawn as text,
    and --upload without the site it needs, nor the token."""
    missing, account = BENCH_HINT[language]
    page.goto(f"{live_server.url}/seasons/S1/hardware/")
    hint = page.locator("#bench-command")
    assert missing in hint.inner_text()
    command = hint.locator("pre code").inner_text()
    assert command == ("PROFILER_AGENT_USER_TOKEN=TOKEN python -m profiler_agent bench DATASET "
                       f"--upload {live_server.url}")
    assert hint.get_by_role("link", name=account).get_attribute("href") == "/account/"
    assert "`" not in page.locator("main").inner_text()
    shoot(page, f"hardware-bench-command-{language[:2]}")
    assert page.console_errors == []
