"""A reference with several named input cases (get_cases(), profiler_agent.bundles.input_cases): every
case checked, the benchmark ones timed, the speedup their geometric mean. Real judging on CPU, with
pure-PyTorch candidates."""

import math

import pytest

from profiler_agent.bundles.input_cases import CaseDeclarationError, parse_cases
from profiler_agent.protocol.result_schema import validate_result

CASES_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_init_inputs():
    return []


def get_cases():
    return {
        "small": dict(kind="both", inputs=lambda: [torch.randn(64, 256)]),
        "wide": dict(kind="benchmark", inputs=lambda: [torch.randn(32, 2048)]),
        "odd": dict(kind="test", inputs=lambda: [torch.randn(7, 13)]),
    }
"""

RIGHT_CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
"""

# right on every shape but the wide one's (2048 columns)
WRONG_ON_WIDE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = x.clamp_min(0)
        return out + 1 if x.shape[-1] == 2048 else out
"""


def _bundle(make_bundle, candidate: str, reference: str = CASES_REFERENCE):
    root = make_bundle(candidate)
    (root / "torchcode.py").write_text(reference)
    return root


def test_a_candidate_wrong_on_one_case_is_a_wrong_answer_naming_that_case(make_bundle, judge):
    result = judge(_bundle(make_bundle, WRONG_ON_WIDE), "--seed", "3").result
    validate_result(result)
    assert result["status"] == "wrong_answer"
    assert result["reason"].startswith('case "wide": trial 0: output 0: max abs error'), result["reason"]
    assert result["correctness"]["passed"] is False
    assert result["timing"]["speedup"] is None and result["timing"]["candidate"]["median_ms"] is None
    # the first case passed and was timed before the wide one was judged
    assert set(result["timing"]["cases"]) == {"small", "wide"}
    assert result["timing"]["cases"]["small"]["speedup"] > 0
    assert result["timing"]["cases"]["wide"]["speedup"] is None


def test_every_case_passed_gives_per_case_figures_and_their_geometric_mean(make_bundle, judge):
    outcome = judge(_bundle(make_bundle, RIGHT_CANDIDATE), "--seed", "5")
    result = outcome.result
    validate_result(result)
    assert result["status"] == "passed", result["reason"]
    cases = result["timing"]["cases"]
    assert list(cases) == ["small", "wide"]  # the test-only case is checked, not timed
    for figures in cases.values():
        assert figures["reference_ms"] > 0 and figures["candidate_ms"] > 0
        assert figures["speedup"] == pytest.approx(figures["reference_ms"] / figures["candidate_ms"])
    mean = math.sqrt(cases["small"]["speedup"] * cases["wide"]["speedup"])
    assert result["timing"]["speedup"] == pytest.approx(mean)
    # the headline medians are the first timed case's, the one the confirmation checks
    assert result["timing"]["reference"]["median_ms"] == cases["small"]["reference_ms"]
    assert result["inputs"] == [{"dtype": "float32", "shape": [64, 256]}]
    # the judge command's table lists each case under the mean
    assert "(geometric mean of the cases)" in outcome.stdout
    assert "  case small" in outcome.stdout and "  case wide" in outcome.stdout and "case odd" not in outcome.stdout


def test_a_test_run_checks_the_test_cases_only(make_bundle, judge):
    result = judge(_bundle(make_bundle, WRONG_ON_WIDE), "--mode", "test", "--seed", "3").result
    validate_result(result)
    # "wide" is a benchmark case: a test run never draws it, so the candidate's bug there goes unseen
    assert result["status"] == "passed", result["reason"]
    assert result["timing"]["cases"] is None and result["timing"]["speedup"] is None


def test_a_test_run_of_a_reference_with_benchmark_cases_alone_checks_those(make_bundle, judge):
    benchmark_only = CASES_REFERENCE.replace('kind="both"', 'kind="benchmark"').replace(
        '        "odd": dict(kind="test", inputs=lambda: [torch.randn(7, 13)]),\n', "")
    result = judge(_bundle(make_bundle, WRONG_ON_WIDE, benchmark_only), "--mode", "test", "--seed", "3").result
    validate_result(result)
    assert result["status"] == "wrong_answer" and result["reason"].startswith('case "wide": trial 0:'), result["reason"]
    assert result["timing"]["speedup"] is None


def test_a_wrong_test_case_fails_a_test_run_naming_it(make_bundle, judge):
    wrong_on_odd = RIGHT_CANDIDATE.replace("return x.clamp_min(0)", "return x.clamp_min(0) * (1 if x.shape[0] != 7 else 2)")
    result = judge(_bundle(make_bundle, wrong_on_odd), "--mode", "test", "--seed", "3").result
    assert result["status"] == "wrong_answer" and result["reason"].startswith('case "odd": trial 0:'), result["reason"]


def test_the_single_get_inputs_case_is_timed_as_default_without_naming_it(make_bundle, judge):
    outcome = judge(make_bundle(RIGHT_CANDIDATE), "--seed", "5")
    result = outcome.result
    validate_result(result)
    assert result["status"] == "passed"
    assert list(result["timing"]["cases"]) == ["default"]
    default = result["timing"]["cases"]["default"]
    assert default["speedup"] == result["timing"]["speedup"]
    assert default["candidate_ms"] == result["timing"]["candidate"]["median_ms"]
    assert "case default" not in outcome.stdout and "geometric mean" not in outcome.stdout


def test_a_malformed_case_declaration_is_a_runtime_error_saying_what_is_wrong(make_bundle, judge):
    bad = CASES_REFERENCE.replace('kind="test"', 'kind="timing"')
    result = judge(_bundle(make_bundle, RIGHT_CANDIDATE, bad)).result
    validate_result(result)
    assert result["status"] == "runtime_error"
    assert "case 'odd' kind 'timing' is not one of test, benchmark, both" in result["reason"], result["reason"]


@pytest.mark.parametrize("declared, message", [
    ([("a", {})], "must return a dict name -> dict"),
    ({}, "returned no case"),
    ({"has space": {"kind": "test", "inputs": list}}, "case name 'has space'"),
    ({"a": [1]}, "case 'a' must be a dict(kind=..., inputs=...), got list"),
    ({"a": {"kind": "test", "inputs": [1, 2]}}, "case 'a' inputs must be a callable"),
    ({"a": {"kind": "test", "inputs": list, "shape": 3}}, "case 'a' has unknown keys ['shape']"),
])
def test_parse_cases_names_the_problem(declared, message):
    with pytest.raises(CaseDeclarationError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        parse_cases(declared, "torchcode.py")


def test_the_cases_example_passes_with_a_compiled_candidate(examples_build_cache, tmp_path, capsys):
    import json

    from profiler_agent.__main__ import main
    from tests.agent.conftest import EXAMPLES

    path = tmp_path / "result.json"
    main(["judge", str(EXAMPLES / "relu-cpu-cases"), "--device", "cpu", "--cache-dir", str(examples_build_cache),
          "--json", str(path), "--seed", "9"])
    result = json.loads(path.read_text())
    assert result["status"] == "passed", result["reason"]
    assert list(result["timing"]["cases"]) == ["rows", "wide"]
    assert "no_custom_kernel" not in result["flags"]  # the C++ extension ran on the first case


# Two timed cases of tens of milliseconds each (demonstrated from outside on the CPU: cpu_demonstration)
TWO_TIMED_CASES = """
import torch, torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return a @ b @ b @ b @ b

def get_init_inputs():
    return []

def get_cases():
    return {"square": dict(kind="both", inputs=lambda: [torch.randn(768, 768), torch.randn(768, 768)]),
            "tall": dict(kind="benchmark", inputs=lambda: [torch.randn(1536, 768), torch.randn(768, 768)])}
"""

# honest on the first case; on the tall one it divides its own times by 5.7 (the harness's timing
# rewritten at import, as tests/agent/test_cpu_demonstration.py's forger does, for one shape)
FORGES_ITS_SECOND_CASE = """
import torch
import profiler_agent.measure.timing as _timing

_original, _seen = _timing.time_interleaved, []

def _forged(*args, **kwargs):
    timings = _original(*args, **kwargs)
    if _seen and _seen[-1] == 1536:
        for times in (timings.times_ms, timings.walls_ms):
            if "candidate" in times:
                times["candidate"] = [t / 5.7 for t in times["candidate"]]
    return timings

_timing.time_interleaved = _forged

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        _seen.append(a.shape[0])
        return a @ b @ b @ b @ b
"""


def test_a_forger_honest_on_its_first_case_is_caught_on_the_case_it_forges(make_bundle, judge):
    """Each timed case's times are confirmed on that case: the forged one is flagged and ranked at what
    the agent's own reading of it showed, and the run's mean with it."""
    result = judge(_bundle(make_bundle, FORGES_ITS_SECOND_CASE, TWO_TIMED_CASES), "--timing-budget", "0.5").result
    assert result["status"] == "passed", result["logs"]["stderr"][-3000:]
    validate_result(result)
    square, tall = result["timing"]["cases"]["square"], result["timing"]["cases"]["tall"]
    assert square["confirmed"] is True and tall["confirmed"] is False, result["logs"]["stderr"][-3000:]
    assert "timing_unconfirmed" in result["flags"]
    assert 'case "tall": not confirmed' in result["logs"]["stderr"]
    # the tall case ranked near the square one's honest figure, not at 5.7 times it
    assert tall["speedup"] < 2 * square["speedup"] and tall["kernel_speedup"] < 2 * square["speedup"]
    assert result["timing"]["speedup"] == pytest.approx(math.sqrt(square["speedup"] * tall["speedup"]))
