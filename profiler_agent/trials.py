"""Correctness trials: fresh seeded inputs, the reference and the candidate each on their own
copies, outputs compared; the first failing trial decides."""

import sys

import torch

from profiler_agent import correctness, tensors
from profiler_agent.guard import submission_code
from profiler_agent.tensors import synchronize


def poison_freed_memory(device, nbytes: int) -> None:
    """Leave NaN bytes in the block the caching allocator hands out next, so a candidate returning
    uninitialized memory cannot pass by finding a stale correct result there."""
    if device.type == "cuda" and nbytes:
        torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(0xFF)


def make_inputs(get_inputs, seed: int, device) -> list:
    torch.manual_seed(seed)
    with submission_code("get_inputs"):
        inputs = list(get_inputs())
    return tensors.to_device(inputs, device)


def check_correctness(reference, candidate, get_inputs, device, settings: dict, report: dict) -> bool:
    result = report["correctness"]
    seed = settings["seed"]
    for trial in range(settings["trials"]):
        expected = actual = again = None  # free last trial's outputs before allocating new ones
        inputs = make_inputs(get_inputs, seed + 1 + trial, device)
        with submission_code("reference"), torch.no_grad():
            expected = reference(*tensors.fresh_copies(inputs))
            synchronize(device)
        poison_freed_memory(device, tensors.tensor_bytes([expected]))
        with submission_code("candidate"), torch.no_grad():
            actual = candidate(*tensors.fresh_copies(inputs))
            synchronize(device)
            if trial == 0:
                again = candidate(*tensors.fresh_copies(inputs))
                synchronize(device)
        if again is not None and not correctness.bitwise_equal(actual, again):
            report["flags"].append("nondeterministic_output")
        outcome = correctness.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"))
        result["trials"] = trial + 1
        for key in ("max_abs_err", "max_rel_err"):
            value = getattr(outcome, key)
            if value is not None:
                result[key] = value if result[key] is None else max(result[key], value)
        if result["atol"] is None:
            result["atol"], result["rtol"] = outcome.atol, outcome.rtol
        if not outcome.passed:
            result["passed"] = False
            result["reason"] = f"trial {trial}: {outcome.reason}"
            print(f"[profiler_agent] wrong answer: {result['reason']}", file=sys.stderr)
            return False
    result["passed"] = True
    return True
