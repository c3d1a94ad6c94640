"""The input sets the timed calls run on: drawn from the seed, several per model, so that no call
sees the input set the call before it saw. A forward that remembers its output for a repeated
input (keyed on the tensor's address and `_version`, say) is then timed on its real work.

Each model gets its own sets (neither can see or spoil the other's), with the same values. The
sets rotate; each use bumps the set's `_version` (no data touched, nothing on the device), so a
memo keyed on (address, version) misses whatever its size. Where the memory budget allows only
one set per model, its floating-point values are rescaled in place between calls instead (a
factor a few ulps from 1, alternately up and down: new data, new version, same signs and zeros).

A short pass on one repeated set afterwards tells whether the candidate runs markedly faster on
inputs it has seen (`input_memoized`); the ranked figure is always the fresh one.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.graph import increment_version

from profiler_agent.trials.correctness_trials import make_inputs
from profiler_agent.util import tensors

TIMING_SETS = 4  # per model, when the budget allows: the per-call timing's rotation
DISTINCT_DRAWS = 4  # sets drawn from the seed; further sets (batched copies) are clones of them
# A candidate whose repeated-input median beats its fresh one by this factor, and beats the
# reference's own repeated-input gain by it too, is flagged. On CUDA both passes flush L2, so
# honest code runs alike on both (a few % apart); on the CPU a repeated input stays in cache,
# which helps the reference alike; a memo that skips the work gains far more than 2x.
MEMO_RATIO = 2.0


def sets_per_model(set_bytes: int, budget_bytes: int, wanted: int) -> int:
    """How many input sets each model gets: up to `wanted`, each set beyond the first costing a
    set for both models out of the budget; at least one (the timing cannot run on none)."""
    if set_bytes <= 0:
        return max(1, wanted)
    affordable = 1 + max(budget_bytes, 0) // (2 * set_bytes)
    return max(1, min(wanted, affordable))


def draw_sets(get_inputs, first: list, first_seed: int, device, count: int) -> dict[str, list[list]]:
    """`count` input sets per model: `first` (drawn from `first_seed`), then sets drawn from the
    next seeds, up to DISTINCT_DRAWS, then clones of those. The candidate's are copies of the
    reference's."""
    reference: list[list] = [first]
    for k in range(1, count):
        if k < DISTINCT_DRAWS:
            reference.append(make_inputs(get_inputs, first_seed + k, device))
        else:
            reference.append(tensors.fresh_copies(reference[k % DISTINCT_DRAWS]))
    return {"reference": reference, "candidate": [tensors.fresh_copies(s) for s in reference]}


def _rescale_factor(dtype: torch.dtype) -> float:
    real = torch.empty(0, dtype=dtype).real.dtype if dtype.is_complex else dtype
    return 1.0 + 16 * torch.finfo(real).eps  # a few ulps: every nonzero value changes


def refresh_in_place(values: list, upward: bool) -> None:
    """New data in the same tensors: floating-point ones rescaled (alternately up and down, so
    values do not drift), every tensor's version bumped."""
    with torch.no_grad():
        for value in tensors.flatten(values):
            if not isinstance(value, torch.Tensor):
                continue
            if value.is_floating_point() or value.is_complex():
                factor = _rescale_factor(value.dtype)
                try:
                    value.mul_(factor if upward else 1.0 / factor)
                    continue
                except RuntimeError:  # e.g. an expanded view, whose elements share memory
                    pass
            increment_version(value)


def bump_versions(values: list) -> None:
    for value in tensors.flatten(values):
        if isinstance(value, torch.Tensor):
            increment_version(value)


class FreshInputs:
    """One model's input sets, handed out in turn; `advance()` runs outside the timed region."""

    def __init__(self, sets: list[list]):
        self.sets = sets
        self.position = 0
        self.calls = 0

    @property
    def args(self) -> list:
        return self.sets[self.position]

    @property
    def refreshes_in_place(self) -> bool:
        return len(self.sets) == 1

    def advance(self) -> None:
        self.calls += 1
        self.position = self.calls % len(self.sets)
        if self.refreshes_in_place:
            refresh_in_place(self.args, upward=self.calls % 2 == 1)
        else:
            bump_versions(self.args)


MEMO_MIN_MS = 0.005  # and by this much: below it, timer jitter on a call of a few microseconds


def gain(fresh_ms: float | None, repeated_ms: float | None) -> float:
    """How many times faster a repeated input ran than fresh ones (1.0 when unknown)."""
    if not fresh_ms or repeated_ms is None:
        return 1.0
    return fresh_ms / repeated_ms if repeated_ms > 0 else math.inf


def input_memoized(fresh_ms: dict[str, float], repeated_ms: dict[str, float]) -> bool:
    """True when the candidate ran markedly faster on a repeated input than on fresh ones (see
    MEMO_RATIO), more so than the reference did."""
    fresh, repeated = fresh_ms.get("candidate"), repeated_ms.get("candidate")
    if fresh is None or repeated is None or fresh - repeated <= MEMO_MIN_MS:
        return False
    reference = gain(fresh_ms.get("reference"), repeated_ms.get("reference"))
    return gain(fresh, repeated) > MEMO_RATIO * max(reference, 1.0)
