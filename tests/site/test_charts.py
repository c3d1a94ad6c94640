"""Chart figures built from stored results: what plotly receives for a submission's latency."""
from leaderboard import charts
from submissions.models import GpuType, Run
from tests.judged_data import passed_result


def run_on(name, result):
    return Run(gpu_type=GpuType(name=name, slug=name.lower()), result=result)


def test_latency_boxes_come_from_the_agents_per_call_samples_grouped_by_gpu():
    h100, c500 = passed_result(4.0, 1.2), passed_result(3.0, 2.1)
    figure = charts.latency([run_on("H100", h100), run_on("C500", c500)])
    assert [trace["type"] for trace in figure["data"]] == ["box", "box"]
    reference, candidate = figure["data"]
    assert candidate["y"] == h100["timing"]["samples"]["candidate"] + c500["timing"]["samples"]["candidate"]
    assert candidate["x"] == ["H100"] * 40 + ["C500"] * 40
    assert len(reference["y"]) == 80 and figure["layout"]["boxmode"] == "group"


def test_latency_falls_back_to_median_bars_without_samples():
    result = passed_result(2.0, 1.0)
    del result["timing"]["samples"]
    figure = charts.latency([run_on("H100", result)])
    assert [trace["type"] for trace in figure["data"]] == ["bar", "bar"]
    assert figure["data"][1]["y"] == [1.0] and figure["data"][1]["error_y"]["array"] == [0.02]
