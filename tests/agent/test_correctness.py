import pytest
import torch

from profiler_agent.checkers.compare_outputs import bitwise_equal, compare_outputs


def test_equal_outputs_pass_with_zero_error():
    x = torch.randn(64, 32)
    outcome = compare_outputs(x, x.clone())
    assert outcome.passed and outcome.max_abs_err == 0.0 and outcome.max_rel_err == 0.0
    assert (outcome.atol, outcome.rtol) == (1e-4, 1e-4)


def test_errors_are_measured_and_tolerances_depend_on_dtype():
    x = torch.ones(16)
    off = x + 5e-3
    fp32 = compare_outputs(x, off)
    assert not fp32.passed and fp32.max_abs_err == pytest.approx(5e-3, rel=1e-3)
    assert fp32.max_rel_err == pytest.approx(5e-3, rel=1e-3)
    assert "max abs error" in fp32.reason
    fp16 = compare_outputs(x.half(), off.half())
    assert fp16.passed and (fp16.atol, fp16.rtol) == (1e-2, 1e-2)
    assert compare_outputs(x, off, atol=1e-2, rtol=0.0).passed  # per-issue override


@pytest.mark.parametrize(
    "actual, reason",
    [
        (torch.zeros(4, 3), "shape (4, 3), expected (3, 4)"),
        (torch.zeros(3, 4, dtype=torch.float64), "dtype torch.float64"),
        ([torch.zeros(3, 4)] * 2, "2 outputs, expected 1"),
        ("not a tensor", "expected a tensor"),
    ],
)
def test_structure_shape_and_dtype_must_match(actual, reason):
    outcome = compare_outputs(torch.zeros(3, 4), actual)
    assert not outcome.passed and reason in outcome.reason


def test_nan_or_inf_must_match_the_reference_exactly():
    expected = torch.tensor([1.0, float("nan"), float("inf")])
    assert compare_outputs(expected, expected.clone()).passed
    assert not compare_outputs(expected, torch.tensor([float("nan"), float("nan"), float("inf")]), atol=1e9).passed
    assert not compare_outputs(expected, torch.tensor([1.0, 0.0, float("inf")]), atol=1e9).passed
    assert not compare_outputs(expected, torch.tensor([1.0, float("nan"), -float("inf")]), atol=1e9).passed


def test_tuple_outputs_are_compared_leaf_by_leaf():
    a, b = torch.randn(8), torch.randint(0, 10, (5,))
    assert compare_outputs((a, [b, 3]), (a.clone(), [b.clone(), 3])).passed
    wrong = compare_outputs((a, [b, 3]), (a.clone(), [b + 1, 3]))
    assert not wrong.passed and wrong.reason.startswith("output 1: 5 elements differ")
    assert not compare_outputs((a, 3), (a, 4)).passed


def test_bitwise_equal_spots_any_difference_but_treats_nan_as_equal():
    x = torch.tensor([1.0, float("nan")])
    assert bitwise_equal((x, 2), (x.clone(), 2))
    assert not bitwise_equal(x, torch.tensor([1.0 + 1e-7, float("nan")]))
    assert not bitwise_equal((x,), (x, x))


def test_the_figures_of_finite_outputs_are_the_max_errors_and_the_verdict_is_allclose():
    torch.manual_seed(0)
    for scale in (0.0, 1e-6, 1e-3, 1.0):
        expected = torch.randn(64, 33)
        expected[0, :5] = 0.0  # no relative error where the reference is exactly zero
        actual = expected + scale * torch.randn(64, 33)
        result = compare_outputs(expected, actual)
        diff = (actual.double() - expected.double()).abs()
        nonzero = expected != 0
        assert result.max_abs_err == pytest.approx(float(diff.max()), rel=1e-12)
        assert result.max_rel_err == pytest.approx(float((diff[nonzero] / expected.double().abs()[nonzero]).max()),
                                                   rel=1e-12)
        assert result.passed == torch.allclose(actual.double(), expected.double(), atol=result.atol, rtol=result.rtol)
