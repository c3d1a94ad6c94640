"""The input sets the timed calls run on: drawn from the seed, several per model, and new values for
every call, so that no timed call sees values an earlier call of the judging saw. A forward that
remembers its output by the tensor's address and `_version`, or by a fingerprint of a few values,
is then timed on its real work; where it answers from memory anyway, its output is wrong for the
call's values (profiler_agent.measure.timed_outputs checks timed outputs).

Each model gets its own sets (neither can see or spoil the other's), with the same values. Up to
DISTINCT_DRAWS sets are drawn from the seed and kept untouched (the bases); before each call the
model's next set is written from its base times a factor per element, uniform within JITTER of 1,
drawn from a generator seeded by the secret seed and the call's number (`call_seed`). Both models
get call n's values; the trusted verifier makes them again from the seed to check a timed output.
The factor keeps signs and zeros, and moves every value enough that an output remembered for
other values is wrong beyond the tolerances. Integer and boolean tensors (indices, masks) keep their
drawn values.

Where the memory budget allows no base beside one set per model, the floating-point values are
rescaled in place between calls instead (a factor a few ulps from 1, alternately up and down: new
data, new version, same signs and zeros), and the timed outputs are checked in the judged process
only (values made in place cannot be made again by the verifier).

A short pass on one repeated set afterwards tells whether the candidate runs markedly faster on
inputs it has seen (`input_memoized`); the ranked figure is always the fresh one.
"""

from __future__ import annotations

import hashlib
import math

import torch
from torch.autograd.graph import increment_version

from profiler_agent.trials.input_draws import make_inputs
from profiler_agent.util import tensors

TIMING_SETS = 4  # per model, when the budget allows: the per-call timing's rotation
DISTINCT_DRAWS = 4  # sets drawn from the seed; further sets (batched copies) are clones of them
# A candidate whose repeated-input median beats its fresh one by this factor, and beats the
# reference's own repeated-input gain by it too, is flagged. On CUDA both passes flush L2, so
# honest code runs alike on both (a few % apart); on the CPU a repeated input stays in cache,
# which helps the reference alike; a memo that skips the work gains far more than 2x.
MEMO_RATIO = 2.0
MEMO_PASSES = 3  # short passes at most, the fastest of each call kept (measure.measurements)
# How far a timed call's values may be from their draw: far enough that 16-bit types get dozens of
# values per element (a fingerprint of a few elements repeats rarely) and that an output remembered
# for other values misses the tolerances, near enough to keep the draw's scale.
JITTER = 0.125


def plan_sets(set_bytes: int, budget_bytes: int, wanted: int) -> tuple[int, bool]:
    """How many input sets each model gets, and whether the bases (untouched draws, one per set up
    to DISTINCT_DRAWS) fit beside them; without bases, as many sets as sets_per_model allows."""
    for count in range(max(1, wanted), 0, -1):
        if set_bytes * (2 * (count - 1) + min(count, DISTINCT_DRAWS)) <= max(budget_bytes, 0):
            return count, True
    return sets_per_model(set_bytes, budget_bytes, wanted), False


def sets_per_model(set_bytes: int, budget_bytes: int, wanted: int) -> int:
    """How many input sets each model gets: up to `wanted`, each set beyond the first costing a
    set for both models out of the budget; at least one (the timing cannot run on none)."""
    if set_bytes <= 0:
        return max(1, wanted)
    affordable = 1 + max(budget_bytes, 0) // (2 * set_bytes)
    return max(1, min(wanted, affordable))


def draw_bases(get_inputs, first: list, first_seed: int, device, count: int) -> list[list]:
    """`first` (drawn from `first_seed`), then sets drawn from the next seeds: `count` in all, at
    most DISTINCT_DRAWS. The verifier draws them again alike."""
    return [first] + [make_inputs(get_inputs, first_seed + k, device) for k in range(1, min(count, DISTINCT_DRAWS))]


def draw_sets(get_inputs, first: list, first_seed: int, device, count: int,
              keep_bases: bool = False) -> dict[str, list[list]]:
    """`count` input sets per model, set k holding draw k % DISTINCT_DRAWS (draw_bases); the
    candidate's are copies of the reference's. `keep_bases`: the draws themselves are kept apart
    (under "bases") and both models get copies; else the reference's sets are the draws."""
    bases = draw_bases(get_inputs, first, first_seed, device, count)
    reference = [bases[k % len(bases)] if k < len(bases) and not keep_bases else tensors.fresh_copies(bases[k % len(bases)])
                 for k in range(count)]
    sets = {"reference": reference, "candidate": [tensors.fresh_copies(s) for s in reference]}
    if keep_bases:
        sets["bases"] = bases
    return sets


def call_seed(secret: int, call: int) -> int:
    """The seed of timed call `call`'s values: unknown without the secret seed."""
    digest = hashlib.sha256(f"timed call values:{secret}:{call}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


class Jitter:
    """Writes a call's values into a set: its base times a factor per element (module docstring)."""

    def __init__(self):
        self._generators = {}

    def _generator(self, device) -> torch.Generator:
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device)
        return self._generators[device]

    def write(self, buffers: list, base: list, seed: int) -> list[int]:
        """Call values into `buffers` (copies of `base`, in place); returns the positions of the
        floating-point inputs that could not take new values (expanded views: shared elements)."""
        kept = []
        with torch.no_grad():
            for position, (buffer, value) in enumerate(zip(tensors.flatten(buffers), tensors.flatten(base))):
                if not isinstance(buffer, torch.Tensor):
                    continue
                generator = self._generator(buffer.device)
                generator.manual_seed(seed + position)
                try:
                    if buffer.is_complex():
                        factor = torch.empty(buffer.shape, dtype=buffer.real.dtype, device=buffer.device)
                        factor.uniform_(1 - JITTER, 1 + JITTER, generator=generator)
                        torch.mul(value, factor, out=buffer)
                    elif buffer.is_floating_point():
                        buffer.uniform_(1 - JITTER, 1 + JITTER, generator=generator).mul_(value)
                    else:
                        buffer.copy_(value)  # indices and masks as drawn (a model may have written them)
                except RuntimeError:  # an expanded view, whose elements share memory
                    increment_version(buffer)
                    if buffer.is_floating_point() or buffer.is_complex():
                        kept.append(position)
        return kept


def call_values(base: list, secret: int, call: int) -> list:
    """Timed call `call`'s values made from `base` (a draw), as the judged process gave them."""
    values = tensors.fresh_copies(base)
    Jitter().write(values, base, call_seed(secret, call))
    return values


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
    """One model's input sets, handed out in turn; `advance()` runs outside the timed region and gives
    the next call its values: from the bases and the secret seed where there are bases, else by a
    rotation of the sets (each use bumping its version) or, with one set, a rescale in place."""

    def __init__(self, sets: list[list], bases: list[list] | None = None, secret: int = 0):
        self.sets = sets
        self.bases = bases
        self.secret = secret
        self.position = 0
        self.calls = 0
        self.kept_values: list[int] = []  # inputs that could not take new values (expanded views)
        self._jitter = Jitter() if bases else None

    @property
    def args(self) -> list:
        return self.sets[self.position]

    @property
    def draw(self) -> int | None:
        """Which base the current call's values come from (None without bases)."""
        return self.position % len(self.bases) if self.bases else None

    @property
    def refreshes_in_place(self) -> bool:
        return not self.bases and len(self.sets) == 1

    def advance(self) -> None:
        self.calls += 1
        self.position = self.calls % len(self.sets)
        if self._jitter is not None:
            self.kept_values = self._jitter.write(self.args, self.bases[self.draw], call_seed(self.secret, self.calls))
        elif self.refreshes_in_place:
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


class ShiftedValues:
    """Values for calls timed from outside the judged process (profiler_agent.judge.cpu_demonstration),
    made at the cost of one pass: each floating-point input is its base times a factor tensor (within
    JITTER of 1, drawn from the seed before the secret is known) rotated by a shift taken from the
    secret and the call's number. Without the secret no call's values can be made, nor its output
    computed ahead (one rotation per element count), and no generator runs while the clock does.
    Integer and boolean inputs keep their drawn values."""

    def __init__(self, bases: list[list], seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.bases = bases
        self.factors = [[torch.empty(v.numel()).uniform_(1 - JITTER, 1 + JITTER, generator=generator).to(v.dtype)
                         if isinstance(v, torch.Tensor) and v.is_floating_point() else None
                         for v in tensors.flatten(base)] for base in bases]
        self.buffers = [tensors.fresh_copies(base) for base in bases]

    def values(self, secret: int, call: int) -> list:
        """Call `call`'s values, written into the buffers of its base (valid until that base's next call)."""
        which = call % len(self.bases)
        buffers = self.buffers[which]
        for position, (buffer, base, factor) in enumerate(zip(tensors.flatten(buffers),
                                                               tensors.flatten(self.bases[which]),
                                                               self.factors[which])):
            n = buffer.numel()
            if factor is None or not n:
                continue
            shift = call_seed(secret, call * 1009 + position) % n
            if buffer.is_contiguous() and base.is_contiguous():  # one pass, nothing allocated
                out, source = buffer.view(-1), base.view(-1)
                torch.mul(source[:n - shift], factor[shift:], out=out[:n - shift])
                torch.mul(source[n - shift:], factor[:shift], out=out[n - shift:])
                continue
            try:
                torch.mul(base, torch.roll(factor, shift).view(base.shape), out=buffer)
            except RuntimeError:  # an expanded view, whose elements share memory: its drawn values stay
                pass
        return buffers
