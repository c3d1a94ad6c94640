"""Correctness trials in the judged process: fresh seeded inputs, the reference and the candidate
each on their own copies. The candidate's outputs go to the exchange folder, where the trusted
verifier (profiler_agent.correctness.verify) judges them; the comparison made here is only a preliminary one
that spares timing a candidate that is plainly wrong. It runs beside submission code, so it is
never trusted for the verdict."""

import random
import sys

import torch

from profiler_agent.correctness import compare, exchange
from profiler_agent.harness import tensors
from profiler_agent.harness.guard import submission_code
from profiler_agent.harness.tensors import synchronize


def poison_freed_memory(device, nbytes: int) -> None:
    """Leave NaN bytes in the block the caching allocator hands out next, so a candidate returning
    uninitialized memory cannot pass by finding a stale correct result there."""
    if device.type == "cuda" and nbytes:
        torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(0xFF)


def seed_everything(seed: int) -> None:
    """get_inputs may draw from torch, random or numpy: every process must draw the same inputs."""
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def make_inputs(get_inputs, seed: int, device) -> list:
    seed_everything(seed)
    with submission_code("get_inputs"):
        inputs = list(get_inputs())
    return tensors.to_device(inputs, device)


def record_comparison(result: dict, trial: int, outcome) -> bool:
    """Fold one trial's comparison into the correctness dict; False when the trial failed."""
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
        return False
    return True


def check_correctness(reference, candidate, get_inputs, device, settings: dict, report: dict, outputs_dir) -> bool:
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
            exchange.save_output(outputs_dir, trial, actual)
            if trial == 0:
                poison_freed_memory(device, tensors.tensor_bytes([actual]))
                again = candidate(*tensors.fresh_copies(inputs))
                synchronize(device)
                exchange.save_output(outputs_dir, trial, again, again=True)
        outcome = compare.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"))
        if not record_comparison(result, trial, outcome):
            print(f"[profiler_agent] wrong answer: {result['reason']}", file=sys.stderr)
            return False
    result["passed"] = True
    return True
