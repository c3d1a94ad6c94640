"""Public pages: both languages, search, hardware comparison, contestant pages, charts' data, plotly served locally."""
import html
import json
import re

from submissions.bundles import build_bundle
from submissions.services import submitting
from tests.judged_data import accepted_sample
from tests.site.bundle_files import valid_files
from tests.page_text import shows


def test_pages_speak_chinese_when_the_browser_asks_and_switch_back(client, season, alice, organizer):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    zh = client.get("/seasons/S1/leaderboard/", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).content.decode()
    assert '<html lang="zh-hans">' in zh and "排行榜" in zh and "先比接受数量" in zh
    en = client.get("/seasons/S1/leaderboard/", headers={"Accept-Language": "en"}).content.decode()
    assert '<html lang="en">' in en and "Accepted count, then base score" in en and "排行榜" not in en
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    chosen = client.get("/", headers={"Accept-Language": "en"}).content.decode()
    assert "首页" in chosen  # the switch wins over the browser's preference


def test_leaderboard_search_and_contestant_page(client, season, alice, bob, organizer):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)})
    found = client.get("/seasons/S1/leaderboard/?q=bo").content.decode()
    assert "Bob" in found and not shows(found, "Alice")
    page = client.get(f"/contestants/{alice.pk}/").content.decode()
    assert "Alice" in page and "2.00×" in page and "S1" in page
    assert client.get("/contestants/987654/").status_code == 404


def test_hardware_comparison_shows_each_accepted_sample_on_each_gpu(client, season, alice, bob, organizer):
    accepted_sample(season, alice, organizer, {"cpu": (1.5, 2.0), "c500": (4.0, 0.5)})
    unreviewed_issue = submitting.open_issue(season, bob, title="not accepted")
    submitting.create_submission(bob, unreviewed_issue, build_bundle(valid_files()))
    html = client.get("/seasons/S1/hardware/").content.decode()
    assert "0.5000 · 4.00×" in html and "2.0000 · 1.50×" in html
    assert "not accepted" not in html
    figure = json.loads(re.search(r'<script id="figure-hardware-matrix" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert figure["data"][0]["type"] == "heatmap" and figure["data"][0]["x"] == ["MetaX C500", "CPU"]
    assert figure["data"][0]["z"] == [[4.0, 1.5]]


def test_the_heatmap_shortens_a_long_title_on_its_axis_and_shows_it_whole_in_its_hover(
        client, season, alice, bob, organizer):
    """The walk: a long title was cut mid-word at 24 characters, with nothing saying so or showing the rest."""
    long_title = ("<b>Fused</b> GELU & bias: 对001-example数据集进行性能优化, tiled for shared memory on every GPU "
                  "type of the season, with a tail long enough to need two lines in the hover")
    long_sample = accepted_sample(season, alice, organizer, {"cpu": (1.5, 2.0)}, title=long_title)
    short_sample = accepted_sample(season, bob, organizer, {"cpu": (2.5, 1.0)}, title="ReLU")
    page = client.get("/seasons/S1/hardware/").content.decode()
    figure = json.loads(re.search(r'<script id="figure-hardware-matrix" type="application/json">(.*?)</script>',
                                  page, re.S).group(1))
    heatmap = figure["data"][0]
    labels = dict(zip(heatmap["y"], heatmap["text"]))
    shortened = f"{html.escape(long_title[:39], quote=False)}… #{long_sample.pk}"
    assert set(labels) == {shortened, f"ReLU #{short_sample.pk}"}
    assert len(html.unescape(shortened.rsplit(" #", 1)[0])) == 40  # 39 characters and the ellipsis
    hover = labels[shortened][0]
    assert "<b>" not in hover and "&lt;b&gt;Fused&lt;/b&gt; GELU &amp; bias" in hover  # text, never markup
    assert hover.endswith(f" #{long_sample.pk}")
    lines = hover.removesuffix(f" #{long_sample.pk}").split("<br>")
    assert len(lines) > 1 and all(len(html.unescape(line)) <= 60 for line in lines)
    assert html.unescape(" ".join(lines)) == long_title  # the whole title
    assert labels[f"ReLU #{short_sample.pk}"] == [f"ReLU #{short_sample.pk}"] * len(heatmap["x"])
    assert heatmap["hovertemplate"] == "%{text}<br>%{x}: %{z:.2f}×<extra></extra>"


def test_season_page_charts_and_local_plotly(client, season, alice, organizer):
    accepted_sample(season, alice, organizer, {"cpu": (2.5, 1.0)})
    html = client.get("/seasons/S1/").content.decode()
    assert 'data-figure="figure-season-accepted"' in html and 'data-figure="figure-season-speedups"' in html
    assert "/static/vendor/plotly/plotly.min.js" in html and "cdn" not in html.lower()
    script = client.get("/static/vendor/plotly/plotly.min.js")
    assert script.status_code == 200
    assert b"plotly" in b"".join(script.streaming_content)[:2000].lower()


def test_json_twins_of_contestant_and_hardware_pages(client, season, alice, organizer):
    submission = accepted_sample(season, alice, organizer, {"cpu": (1.5, 2.0), "c500": (4.0, 0.5)})
    hardware = client.get("/api/v1/seasons/S1/hardware").json()
    assert hardware["gpu_types"] == ["c500", "cpu"]
    assert hardware["rows"][0]["submission"] == submission.pk
    c500_run = submission.runs.get(gpu_type__slug="c500")
    assert hardware["rows"][0]["cells"]["c500"] == {"candidate_median_ms": 0.5, "speedup": 4.0, "run": c500_run.pk,
                                                    "runs_counted": 1}
    person = client.get(f"/api/v1/contestants/{alice.pk}").json()
    assert person["display_name"] == "Alice" and person["standings"][0]["accepted_count"] == 1
    assert sorted(r["speedup"] for r in person["submissions"][0]["runs"]) == [1.5, 4.0]
    assert client.get("/api/v1/contestants/999999").status_code == 404
    assert client.get("/api/v1/seasons/S9/hardware").status_code == 404


def test_per_gpu_type_leaderboard_ranks_by_passed_samples_then_geomean(client, season, alice, bob, organizer):
    from submissions.models import GpuStanding

    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0), "c500": (8.0, 0.2)})
    accepted_sample(season, alice, organizer, {"cpu": (8.0, 1.0)})
    accepted_sample(season, bob, organizer, {"cpu": (16.0, 1.0), "c500": (2.0, 1.0)})
    cpu = client.get("/api/v1/seasons/S1/gpus/cpu/leaderboard").json()
    assert [(r["rank"], r["contestant"], r["passed_count"], round(r["geomean_speedup"], 3)) for r in cpu] == [
        (1, "Alice", 2, 4.0), (2, "Bob", 1, 16.0)]
    c500 = client.get("/api/v1/seasons/S1/gpus/c500/leaderboard").json()
    assert [(r["rank"], r["contestant"]) for r in c500] == [(1, "Alice"), (2, "Bob")]
    assert GpuStanding.objects.filter(gpu_type__slug="c500", contestant=alice).get().best_speedup == 8.0
    page = client.get("/seasons/S1/gpus/c500/").content.decode()
    table = page[page.index("<table"):]  # not the header: a random CSRF token could spell "Bob" there
    assert table.index("Alice") < table.index("Bob") and "8.00×" in table
    assert client.get("/seasons/S1/gpus/h100/").status_code == 404
    assert client.get("/api/v1/seasons/S1/gpus/h100/leaderboard").status_code == 404


def test_issue_page_json_twin(client, season, alice, organizer):
    submission = accepted_sample(season, alice, organizer, {"cpu": (2.5, 1.0)}, title="Fused GELU")
    body = client.get(f"/api/v1/issues/{submission.issue.code.lower()}").json()
    assert (body["title"], body["author"], body["season"]) == ("Fused GELU", "Alice", "S1")
    assert [s["id"] for s in body["submissions"]] == [submission.pk]
    assert {r["gpu_type"]: r["speedup"] for r in body["submissions"][0]["runs"]} == {"cpu": 2.5, "c500": None}
    assert "files" not in body["submissions"][0]  # no code in the public twin
    assert client.get("/api/v1/issues/NOPEXX").status_code == 404


def test_a_submissions_charts_fragment_has_latency_boxes_roofline_and_telemetry(client, season, alice, organizer):
    # what its page fetches when the last verdict arrives (the browser tests watch it live)
    submission = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0), "c500": (4.0, 0.5)})
    cpu_run = submission.runs.get(gpu_type__slug="cpu")
    cpu_run.result["metrics"]["flops"] = None  # no FLOP count (an unknown operator): no roofline point
    cpu_run.save(update_fields=["result"])
    html = client.get(f"/submissions/{submission.pk}/charts/").content.decode()
    figures = {name: json.loads(body) for name, body in
               re.findall(r'<script id="([\w-]+)" type="application/json">(.*?)</script>', html, re.S)}
    latency, roofline, telemetry = (next(f for name, f in figures.items() if kind in name)
                                    for kind in ("latency", "roofline", "telemetry"))
    assert [trace["type"] for trace in latency["data"]] == ["box", "box"]
    assert sorted(set(latency["data"][1]["x"])) == ["CPU", "MetaX C500"]
    # the C500's point under its roofs; the CPU run has no FLOP count
    assert [(trace["mode"], trace["name"].split(" · ")[-1]) for trace in roofline["data"]] == [
        ("markers", "MetaX C500"), ("lines", "MetaX C500")]
    assert [trace.get("yaxis") for trace in telemetry["data"]] == [None, "y2", None, "y2"]  # power, then clock
    assert client.get("/submissions/987654/charts/").status_code == 404


def test_the_500_page_wears_the_site_layout_with_the_requests_context(client, settings, alice):
    settings.ROOT_URLCONF = "tests.browser.failing_urls"
    client.raise_request_exception = False
    client.force_login(alice.user)
    response = client.get("/test-only/server-error/", headers={"Accept-Language": "zh-CN"})
    html = response.content.decode()
    assert response.status_code == 500 and '<html lang="zh-hans">' in html
    assert re.search(r"<header.*alice.*</header>", html, re.S)  # who is signed in, as on every page
