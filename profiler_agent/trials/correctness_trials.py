"""Correctness trials in the judged process: fresh seeded inputs for every trial, all kept alive
until the last call, the reference and the candidate each on their own copies, called alike
(profiler_agent.trials.call_plan). The candidate's outputs go to the exchange folder, where the trusted
verifier (profiler_agent.graders.verifier) judges them; the comparison made here is only a preliminary one
that spares timing a candidate that is plainly wrong. It runs beside submission code, so it is
never trusted for the verdict."""

import sys

import torch

from profiler_agent.trials import call_plan, output_exchange, side_streams
from profiler_agent.checkers import compare_outputs
from profiler_agent.trials.call_plan import Call
from profiler_agent.trials.input_draws import make_inputs
from profiler_agent.util import tensors
from profiler_agent.util.submission_failures import submission_code
from profiler_agent.util.tensors import synchronize


def poison_freed_memory(device, nbytes: int) -> None:
    """Leave NaN bytes in the block the caching allocator hands out next, so a candidate returning
    uninitialized memory cannot pass by finding a stale correct result there."""
    if device.type == "cuda" and nbytes:
        torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(0xFF)


def record_comparison(result: dict, call: Call, outcome) -> bool:
    """Fold one call's comparison into the correctness dict; False when the call failed."""
    if not call.repeat:
        result["trials"] = call.trial + 1
    for key in ("max_abs_err", "max_rel_err"):
        value = getattr(outcome, key)
        if value is not None:
            result[key] = value if result[key] is None else max(result[key], value)
    if result["atol"] is None:
        result["atol"], result["rtol"] = outcome.atol, outcome.rtol
    if not outcome.passed:
        result["passed"] = False
        result["reason"] = f"{call.label}: {outcome.reason}"
        return False
    return True


def planned_calls(first_inputs: list, device, settings: dict) -> tuple[list[Call], str | None]:
    """The calls to make (see profiler_agent.trials.call_plan), and a note when fewer trials fit."""
    requested = settings["trials"]
    trials = call_plan.trials_that_fit(requested, tensors.tensor_bytes(first_inputs),
                                   call_plan.capacity_bytes(device, settings.get("memory_limit_bytes")))
    note = call_plan.fewer_trials_note(trials, requested) if trials < requested else None
    return call_plan.call_plan(trials), note


def call_inputs(get_inputs, seed: int, device, plan: list[Call], first: list) -> list[tuple[list, list]]:
    """(reference's, candidate's) copies of each trial's inputs, all drawn now and kept alive
    together: no two calls share an address, and neither model sees the other's copy. `first`, trial
    0's draw, is the reference's copy of it. The repeat has none: it is drawn when it runs."""
    drawn = []
    for call in plan:
        if call.repeat:
            continue
        if call == plan[0]:
            drawn.append((first, tensors.fresh_copies(first)))
        else:
            inputs = make_inputs(get_inputs, seed + 1 + call.trial, device)
            drawn.append((inputs, tensors.fresh_copies(inputs)))
    return drawn


def refill(buffers: list, values: list) -> list | None:
    """`values` written into `buffers` in place (addresses a model has seen, now holding other
    values), or None where their layouts differ (get_inputs drew other shapes). Both models get
    this alike, so one that keeps a reference to an earlier input sees the same change in both."""
    if len(buffers) != len(values):
        return None
    for buffer, value in zip(buffers, values):
        if isinstance(buffer, torch.Tensor) != isinstance(value, torch.Tensor):
            return None
        if isinstance(value, torch.Tensor) and (
            (buffer.shape, buffer.dtype, buffer.device) != (value.shape, value.dtype, value.device)
            or not buffer.is_contiguous()
        ):
            return None
    return [b.copy_(v) if isinstance(v, torch.Tensor) else v for b, v in zip(buffers, values)]


def check_correctness(reference, candidate, get_inputs, device, settings: dict, report: dict, outputs_dir) -> bool:
    """Both models get the same calls in the same order, each output copied before the next call;
    the candidate's go to the exchange folder. Stops at the first preliminary failure."""
    result = report["correctness"]
    seed = settings["seed"]
    first = make_inputs(get_inputs, seed + 1, device)
    plan, note = planned_calls(first, device, settings)
    if note:
        print(f"[profiler_agent] {note}", file=sys.stderr)
    drawn = call_inputs(get_inputs, seed, device, plan, first)
    del first
    for call in plan:
        expected = actual = returned = None  # free the last call's copies before the next call allocates
        if call.repeat:  # drawn now, not before: the trial it is written into had to see its own values
            values = make_inputs(get_inputs, seed + 1 + call.trial, device)
            reference_buffers, candidate_buffers = drawn[call.into]
            reference_inputs = refill(reference_buffers, values) or tensors.fresh_copies(values)
            candidate_inputs = refill(candidate_buffers, values) or tensors.fresh_copies(values)
            del values
        else:
            reference_inputs, candidate_inputs = drawn[call.trial]
        with submission_code(f"reference ({call.label})"), torch.no_grad():
            expected = tensors.detached_copies(reference(*reference_inputs))
            synchronize(device)
        poison_freed_memory(device, tensors.tensor_bytes([expected]))
        with submission_code(f"candidate ({call.label})"), torch.no_grad():
            side_streams.hold_other_streams(device)  # work left on another stream lands late, every time
            returned = candidate(*candidate_inputs)
            actual = tensors.detached_copies(returned)  # on the caller's stream, as its next reader would
            synchronize(device)
        output_exchange.save_output(outputs_dir, call.trial, actual, again=call.repeat)
        outcome = compare_outputs.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"),
                                          getattr(reference, "output_names", None),
                                          getattr(reference, "scaled_outputs", frozenset()))
        if not outcome.passed and device.type == "cuda" and side_streams.still_written(actual, returned):
            outcome.reason = f"{side_streams.UNJOINED} ({outcome.reason})"
        returned = None
        if not record_comparison(result, call, outcome):
            print(f"[profiler_agent] wrong answer: {result['reason']}", file=sys.stderr)
            return False
    result["passed"] = True
    return True
