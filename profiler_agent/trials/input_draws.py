"""A call's inputs, drawn from a seed by the reference's get_inputs(), alike in every process of a
judging (the judged one, the verifier, the profiled one, the check).

On a GPU, get_inputs() runs with the judging's device as torch's default device, so `torch.randn(...)`
draws there: a CPU draw of 16M floats takes 0.1 s, and a judging draws its inputs some thirty times
across its processes. Every process seeds the device's generator alike, so they draw the same
values (bench/judge/input_draws.py checks it). A get_inputs that cannot run there (a CPU generator,
numpy arrays mixed in) is drawn on the CPU, as on a CPU host, and moved. Deterministic algorithms are
not switched on for the draw: on CUDA that costs 4-6 s at its first use in each process.
"""

from __future__ import annotations

import random
import sys

import torch

from profiler_agent.util import tensors
from profiler_agent.util.submission_failures import submission_code


def seed_everything(seed: int) -> None:
    """get_inputs may draw from torch, random or numpy: every process must draw the same inputs."""
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def draw_where_it_runs(get_inputs, seed: int, device: torch.device) -> list | None:
    """get_inputs()'s draw made on `device`, or None where it cannot run there."""
    seed_everything(seed)
    try:
        with device:  # torch's default device while get_inputs runs
            return list(get_inputs())
    except Exception:  # noqa: BLE001 - any failure there means a draw on the CPU, which says what is wrong
        return None


def make_inputs(get_inputs, seed: int, device) -> list:
    """The inputs of seed `seed` on `device`: drawn there on a GPU where get_inputs allows, else on
    the CPU and moved. What get_inputs raises on the CPU (or a SystemExit anywhere) is the submission's."""
    device = torch.device(device)
    with submission_code("get_inputs"):
        inputs = draw_where_it_runs(get_inputs, seed, device) if device.type != "cpu" else None
        if inputs is None:
            seed_everything(seed)
            inputs = list(get_inputs())
    return tensors.to_device(inputs, device)
