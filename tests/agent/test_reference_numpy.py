"""The bundle's numpy ground truth (`reference_numpy` in torchcode.py), checked by the trusted verifier
against the reference model: recorded in correctness.reference_numpy, never part of the verdict."""

import pytest
import torch

from profiler_agent.checkers import ground_truth
from profiler_agent.protocol.result_schema import validate_result
from tests.agent.conftest import SMALL_RELU_ROWS, relu_reference

numpy = pytest.importorskip("numpy")

FAST = ("--timing-budget", "0.2")  # timing is not what these tests look at


@pytest.fixture
def relu_rows():
    """What these tests assert does not depend on the inputs' size: the small ReLU reference."""
    return SMALL_RELU_ROWS

TORCH_RELU = '''
    import torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''


def reference_with(ground_truth_source: str) -> str:
    return relu_reference(SMALL_RELU_ROWS) + "\n\nimport numpy as np\n\n" + ground_truth_source


def judged(make_bundle, judge, ground_truth_source: str | None, candidate: str = TORCH_RELU) -> dict:
    extra = {} if ground_truth_source is None else {"torchcode.py": reference_with(ground_truth_source)}
    result = judge(make_bundle(candidate, **extra), *FAST).result
    validate_result(result)
    return result


def test_a_ground_truth_that_agrees_is_recorded_even_when_it_computes_in_float64(make_bundle, judge):
    result = judged(make_bundle, judge, '''
def reference_numpy(x):
    return np.maximum(x.astype(np.float64), 0.0)
''')
    assert result["status"] == "passed"
    assert result["correctness"]["reference_numpy"] == {"outcome": "agrees", "max_abs_err": 0.0, "detail": None}


def test_a_ground_truth_that_disagrees_is_recorded_and_the_candidate_still_passes(make_bundle, judge):
    result = judged(make_bundle, judge, '''
def reference_numpy(x):
    return np.maximum(x, 0) + 0.5
''')
    assert result["status"] == "passed" and result["correctness"]["passed"] is True
    check = result["correctness"]["reference_numpy"]
    assert check["outcome"] == "disagrees"
    assert check["max_abs_err"] == pytest.approx(0.5)
    assert "max abs error" in check["detail"]


def test_a_ground_truth_that_raises_is_an_error_not_a_failed_run(make_bundle, judge):
    result = judged(make_bundle, judge, '''
def reference_numpy(x):
    raise ValueError("no numpy version of this yet")
''')
    assert result["status"] == "passed"
    assert result["correctness"]["reference_numpy"] == {
        "outcome": "error", "max_abs_err": None, "detail": "ValueError: no numpy version of this yet",
    }


def test_without_a_ground_truth_the_check_is_null(make_bundle, judge):
    result = judged(make_bundle, judge, None)
    assert result["status"] == "passed"
    assert result["correctness"]["reference_numpy"] is None


def test_the_ground_truth_is_checked_whatever_the_candidates_verdict(make_bundle, judge):
    result = judged(make_bundle, judge, '''
def reference_numpy(x):
    return np.maximum(x, 0)
''', candidate=TORCH_RELU.replace("torch.relu(x)", "torch.relu(x) + 1"))
    assert result["status"] == "wrong_answer"
    assert result["correctness"]["reference_numpy"]["outcome"] == "agrees"


def test_the_judged_process_cannot_claim_a_ground_truth_outcome(make_bundle, judge):
    """A forged report with an error of its own: the verifier never runs, and the outcome the report
    claims is dropped (the finding is the verifier's alone)."""
    result = judged(make_bundle, judge, None, candidate='''
        import json, os, torch

        FORGED = json.dumps({
            "error": {"origin": "submission", "stage": "candidate", "type": "X", "message": "forged"},
            "correctness": {"reference_numpy": {"outcome": "agrees", "max_abs_err": 0.0, "detail": None}},
        }).encode()

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                for fd in range(3, 1024):  # the report pipe is one of these
                    try:
                        os.write(fd, FORGED)
                        os.close(fd)
                    except OSError:
                        pass
                os._exit(0)
    ''')
    assert result["status"] == "runtime_error"
    assert result["correctness"]["reference_numpy"] is None


# ---- the check itself, in process ---------------------------------------------------------------

def test_tuples_numpy_scalars_and_bfloat16_inputs_are_compared_by_value():
    x = torch.randn(4, 3, dtype=torch.bfloat16)
    expected = (torch.relu(x), x.float().sum())

    def reference_numpy(a):
        assert a.dtype == numpy.float32  # numpy has no bfloat16
        return np.maximum(a, 0), np.float64(a.sum())

    np = numpy
    check = ground_truth.check(reference_numpy, [x], expected, None, None)
    assert check["outcome"] == "agrees", check
    check = ground_truth.check(lambda a: np.maximum(a, 0), [x], expected, None, None)
    assert check["outcome"] == "disagrees" and "1 outputs, expected 2" in check["detail"]


def test_the_ground_truth_gets_copies_it_cannot_spoil():
    x = torch.randn(5)
    before = x.clone()

    def scribbles(a):
        a[:] = 0
        return np.maximum(a, 0)

    np = numpy
    ground_truth.check(scribbles, [x], torch.relu(x), None, None)
    assert torch.equal(x, before)


def test_a_ground_truth_that_hangs_is_stopped_and_reported(monkeypatch):
    monkeypatch.setattr(ground_truth, "TIME_LIMIT_S", 0.2)

    def hangs(a):
        while True:
            pass

    check = ground_truth.check(hangs, [torch.ones(2)], torch.ones(2), None, None)
    assert check["outcome"] == "error" and "longer than 0.2 s" in check["detail"]


def test_no_function_means_no_check_and_a_non_function_is_an_error():
    assert ground_truth.check(None, [torch.ones(2)], torch.ones(2), None, None) is None
    assert ground_truth.check(42, [torch.ones(2)], torch.ones(2), None, None)["outcome"] == "error"
