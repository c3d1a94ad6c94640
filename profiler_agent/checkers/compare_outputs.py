"""Comparing a candidate's outputs with the reference's: structure, shape, dtype, NaN/inf, tolerance."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from profiler_agent.util.tensors import flatten

# atol = rtol per dtype; issues may override both through the run options.
DEFAULT_TOLERANCE = {
    torch.float64: 1e-6,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 1e-2,
}
LOOSEST_FLOAT_TOLERANCE = 1e-2  # for float types not in the table (fp8 and friends)


def tolerances(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0, 0.0  # integers and booleans must match exactly
    default = DEFAULT_TOLERANCE.get(dtype, LOOSEST_FLOAT_TOLERANCE)
    return (default if atol is None else atol), (default if rtol is None else rtol)


@dataclass
class Comparison:
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    atol: float | None = None
    rtol: float | None = None
    reason: str | None = None


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _compare_tensors(expected: torch.Tensor, actual, atol, rtol, where: str, scaled: bool = False) -> Comparison:
    if not isinstance(actual, torch.Tensor):
        return Comparison(False, reason=f"{where}: expected a tensor, got {type(actual).__name__}")
    if actual.shape != expected.shape:
        return Comparison(False, reason=f"{where}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if actual.dtype != expected.dtype:
        return Comparison(False, reason=f"{where}: dtype {actual.dtype}, expected {expected.dtype}")
    atol, rtol = tolerances(expected.dtype, atol, rtol)
    if scaled and expected.is_floating_point() and expected.numel():
        # a gradient's scale is the problem's (a mean over 2048 rows: 1e-7..5e-4), so its absolute
        # tolerance is a share of its largest value: a fixed 1e-4 would pass any error below that
        atol *= float(expected.detach().abs().max())
    exp = expected.detach()
    act = actual.detach().to(exp.device)
    if exp.is_complex():
        exp, act = torch.view_as_real(exp), torch.view_as_real(act)
    if not (exp.is_floating_point()):
        passed = torch.equal(exp, act)
        mismatches = int((exp != act).sum()) if not passed else 0
        abs_err = 0.0 if passed else None
        return Comparison(passed, abs_err, abs_err, atol, rtol,
                          None if passed else f"{where}: {mismatches} elements differ")
    if bool(torch.isfinite(exp).all()) and bool(torch.isfinite(act).all()):  # the common case
        # on the CPU in chunks that stay in its cache; on a GPU at once (a chunk is a launch or more)
        chunk = CHUNK_ELEMENTS if exp.device.type == "cpu" else max(exp.numel(), 1)
        close, abs_err, rel_err = _finite_errors(exp.reshape(-1), act.reshape(-1), atol, rtol, chunk)
        reason = None if close else _tolerance_reason(where, abs_err, rel_err, atol, rtol)
        return Comparison(close, abs_err, rel_err, atol, rtol, reason)
    exp64, act64 = exp.double(), act.double()
    exp_nan, exp_inf = exp64.isnan(), exp64.isinf()
    # NaN and inf must sit exactly where the reference has them (inf with the same sign)
    same_nonfinite = (
        torch.equal(exp_nan, act64.isnan())
        and torch.equal(exp_inf, act64.isinf())
        and torch.equal(exp64[exp_inf], act64[exp_inf])
    )
    both = torch.isfinite(exp64) & torch.isfinite(act64)
    diff, ref_abs = (act64[both] - exp64[both]).abs(), exp64[both].abs()
    close = same_nonfinite and torch.allclose(act64, exp64, atol=atol, rtol=rtol, equal_nan=True)
    abs_err = float(diff.max()) if diff.numel() else 0.0
    nonzero = ref_abs > 0  # relative error is undefined where the reference is exactly zero
    rel_err = float((diff[nonzero] / ref_abs[nonzero]).max()) if bool(nonzero.any()) else 0.0
    if not same_nonfinite:
        return Comparison(False, abs_err, rel_err, atol, rtol,
                          f"{where}: NaN/inf where the reference has none (or the other way round)")
    reason = None if close else _tolerance_reason(where, abs_err, rel_err, atol, rtol)
    return Comparison(close, abs_err, rel_err, atol, rtol, reason)


CHUNK_ELEMENTS = 1 << 16  # 512 KiB of float64 a side: each pass over a chunk stays in the CPU's cache


def _finite_errors(exp: torch.Tensor, act: torch.Tensor, atol: float, rtol: float,
                   chunk: int) -> tuple[bool, float, float]:
    """(all within torch.allclose's rule, max abs error, max rel error) of two flat finite tensors, in
    float64, `chunk` elements at a time: the same figures whatever the chunk, and in the CPU's cache a
    fraction of whole copies' memory traffic (a CPU judging compares 16 MB outputs four times or more)."""
    close, abs_err, rel_err = True, 0.0, 0.0
    for start in range(0, exp.numel(), chunk):
        # copies even of float64 tensors: what follows works in place
        exp64 = exp[start:start + chunk].to(torch.float64, copy=True)
        diff = act[start:start + chunk].to(torch.float64, copy=True).sub_(exp64).abs_()
        ref_abs = exp64.abs_()
        close = close and bool((diff <= ref_abs * rtol + atol).all())
        abs_err = max(abs_err, float(diff.max()))
        # relative error only where the reference is not exactly zero (undefined there)
        relative = torch.where(ref_abs > 0, diff.div_(ref_abs), 0.0)
        rel_err = max(rel_err, float(relative.max()))
    return close, abs_err, rel_err


def _tolerance_reason(where: str, abs_err: float, rel_err: float, atol: float, rtol: float) -> str:
    return f"{where}: max abs error {abs_err:.3e}, max rel error {rel_err:.3e} (atol {atol:g}, rtol {rtol:g})"


def _compare_plain(expected, actual, atol, rtol, where: str) -> Comparison:
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        atol = 1e-4 if atol is None else atol
        rtol = 1e-4 if rtol is None else rtol
        ok = math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol) or (math.isnan(expected) and math.isnan(actual))
        err = abs(actual - expected) if math.isfinite(actual - expected) else None
        return Comparison(ok, err, None, atol, rtol, None if ok else f"{where}: {actual!r}, expected {expected!r}")
    ok = type(actual) is type(expected) and actual == expected
    return Comparison(ok, None, None, None, None, None if ok else f"{where}: {actual!r}, expected {expected!r}")


def compare_outputs(expected, actual, atol: float | None = None, rtol: float | None = None,
                    names: list[str] | None = None, scaled: set[int] | frozenset = frozenset()) -> Comparison:
    """Compare two model outputs leaf by leaf; atol/rtol override the per-dtype defaults. `names`:
    what each leaf is, for the reason (the reference model's `output_names`, where it has them);
    `scaled`: the leaves whose atol is relative to their largest value (gradients: `scaled_outputs`)."""
    exp_leaves, act_leaves = flatten(expected), flatten(actual)
    if len(exp_leaves) != len(act_leaves):
        return Comparison(False, reason=f"{len(act_leaves)} outputs, expected {len(exp_leaves)}")
    total = Comparison(True)
    for i, (exp, act) in enumerate(zip(exp_leaves, act_leaves)):
        where = names[i] if names and i < len(names) else f"output {i}"
        if isinstance(exp, torch.Tensor):
            one = _compare_tensors(exp, act, atol, rtol, where, i in scaled)
        else:
            one = _compare_plain(exp, act, atol, rtol, where)
        total.max_abs_err = _max(total.max_abs_err, one.max_abs_err)
        total.max_rel_err = _max(total.max_rel_err, one.max_rel_err)
        if total.atol is None:  # report the tolerances of the first output that has any
            total.atol, total.rtol = one.atol, one.rtol
        if not one.passed:
            total.passed = False
            total.reason = total.reason or one.reason
    return total


def bitwise_equal(first, second) -> bool:
    """Same outputs bit for bit (NaN equal to NaN): used to spot nondeterministic candidates."""
    a_leaves, b_leaves = flatten(first), flatten(second)
    if len(a_leaves) != len(b_leaves):
        return False
    for a, b in zip(a_leaves, b_leaves):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            if a.is_floating_point() or a.is_complex():
                if not bool(((a == b) | (a.isnan() & b.isnan())).all()):
                    return False
            elif not torch.equal(a, b):
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True
