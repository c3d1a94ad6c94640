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


def test_the_heatmap_colours_span_its_values_and_parity_even_for_one_value():
    from types import SimpleNamespace

    gpus = [SimpleNamespace(name="H100"), SimpleNamespace(name="CPU")]

    def row(pk, *speedups):
        return {"submission": SimpleNamespace(pk=pk, issue=SimpleNamespace(title="ReLU")),
                "cells": [SimpleNamespace(speedup=s) if s else None for s in speedups]}

    one = charts.hardware_matrix(gpus, [row(1, 3.65, None)])["data"][0]
    assert (one["zmin"], one["zmax"]) == (1.0, 3.65)  # not plotly's 3.3 to 4 around the one value
    several = charts.hardware_matrix(gpus, [row(1, 3.65, 0.5), row(2, 8.0, None)])["data"][0]
    assert (several["zmin"], several["zmax"]) == (0.5, 8.0)
    parity = charts.hardware_matrix(gpus, [row(1, 1.0, None)])["data"][0]
    assert (parity["zmin"], parity["zmax"]) == (1.0, 2.0)  # a range, not a point

