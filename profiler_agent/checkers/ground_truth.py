"""The bundle's numpy ground truth: `reference_numpy(*inputs)` in torchcode.py, checked against the
reference model by the trusted verifier on one trial's inputs.

It checks what organizers rely on (that the reference computes what the numpy function says),
never the candidate: its outcome is recorded in `correctness.reference_numpy` and changes no verdict.
"""

from __future__ import annotations

import signal

import torch

from profiler_agent.checkers import compare_outputs
from profiler_agent.util.tensors import flatten

TIME_LIMIT_S = 60.0  # a ground truth that hangs must not hold the verdict back
MAX_DETAIL_CHARS = 500


class GroundTruthTimeout(Exception):
    pass


def numpy_copies(value):
    """Numpy copies of the tensors in `value` (nested lists and tuples too); other values as they are.
    Numpy has no bfloat16: those become float32."""
    if isinstance(value, (list, tuple)):
        return type(value)(numpy_copies(v) for v in value)
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.float()
        return tensor.numpy().copy()
    return value


def as_tensors_like(expected, output) -> list:
    """The ground truth's output leaves as tensors of the reference output's dtypes, so the
    comparison looks at values (numpy often computes in float64) and not at dtypes."""
    import numpy

    expected_leaves, leaves = flatten(expected), flatten(output)
    converted = []
    for exp, leaf in zip(expected_leaves, leaves):
        if isinstance(exp, torch.Tensor) and not isinstance(leaf, torch.Tensor):
            # a C-ordered copy (torch refuses negative strides); 0-d for a numpy scalar or a number
            leaf = torch.as_tensor(numpy.array(leaf, order="C"))
        if isinstance(exp, torch.Tensor):
            leaf = leaf.to(dtype=exp.dtype)
        elif isinstance(leaf, numpy.generic):
            leaf = leaf.item()  # a numpy scalar where the reference returns a Python number
        converted.append(leaf)
    return converted + leaves[len(expected_leaves):]  # extra leaves stay: the count is compared


def _raise_timeout(signum, frame):
    raise GroundTruthTimeout(f"reference_numpy ran longer than {TIME_LIMIT_S:g} s")


def _call_with_time_limit(function, args: list):
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    try:
        return function(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(reference_numpy, inputs: list, expected, atol: float | None, rtol: float | None) -> dict | None:
    """Compare `reference_numpy` on numpy copies of `inputs` with `expected`, the reference model's
    output on the same inputs, under the verdict's tolerances. None when there is no function."""
    if reference_numpy is None:
        return None
    try:
        if not callable(reference_numpy):
            raise TypeError("reference_numpy is not a function")
        output = _call_with_time_limit(reference_numpy, numpy_copies(list(inputs)))
        actual = as_tensors_like(expected, output)
    except BaseException as exc:  # SystemExit too: the ground truth's failure, not the verifier's
        if isinstance(exc, KeyboardInterrupt):
            raise
        detail = f"{type(exc).__name__}: {exc}"[:MAX_DETAIL_CHARS]
        return {"outcome": "error", "max_abs_err": None, "detail": detail}
    outcome = compare_outputs.compare_outputs(flatten(expected), actual, atol, rtol)
    return {
        "outcome": "agrees" if outcome.passed else "disagrees",
        "max_abs_err": outcome.max_abs_err,
        "detail": None if outcome.passed else (outcome.reason or "")[:MAX_DETAIL_CHARS],
    }
