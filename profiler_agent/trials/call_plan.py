"""The calls both models get in the correctness trials, in order, and how many trials fit in memory.

The judged process and the trusted verifier both follow this plan, so a model that keeps state
between calls (an RNN's hidden state) is in the same state in both, call by call: one call per
trial, then trial 0's inputs again (the repeat behind `nondeterministic_output`), to the reference
and to the candidate alike.

Every trial's inputs stay alive until the last call, so no two trials share an address: a candidate
that replays a CUDA graph captured on its first call's inputs (or reads from any address it saw
before) gets stale data and fails. The repeat's inputs go to the candidate written into trial 1's
input tensors: an address it has seen, now holding other values, so an output remembered by
`data_ptr()` is stale there. When all trials cannot fit, fewer run (never a false verdict): both
processes work the number out from the same figures (trial 0's input bytes, the device's total
memory or the run's memory limit), so they agree without trusting each other.
"""

from __future__ import annotations

from dataclasses import dataclass

# Kept inputs (two copies per call: the reference's and the candidate's) may take this share of the
# capacity; the rest is for outputs and the models' own work.
KEPT_INPUTS_SHARE = 0.5


@dataclass(frozen=True)
class Call:
    trial: int  # whose inputs (seed + 1 + trial)
    repeat: bool = False  # trial 0's inputs again, after every trial
    into: int | None = None  # the repeat: the trial whose input tensors the candidate's copy is written into

    @property
    def label(self) -> str:
        if not self.repeat:
            return f"trial {self.trial}"
        where = f", written into trial {self.into}'s input tensors" if self.into is not None else ""
        return f"repeat of trial {self.trial} (its inputs again{where})"


def call_plan(trials: int) -> list[Call]:
    """One call per trial, then trial 0's inputs again, written into trial 1's tensors (into trial
    0's own where it is the only one: memory allowed no more)."""
    return [Call(t) for t in range(trials)] + [Call(0, repeat=True, into=1 if trials > 1 else 0)]


def trials_that_fit(requested: int, input_bytes: int, capacity_bytes: int | None) -> int:
    """How many of `requested` trials can keep their inputs alive at once (at least one). The
    repeat keeps nothing of its own: it is written into a trial's tensors when it runs."""
    if not capacity_bytes or not input_bytes:
        return requested
    per_call = 2 * input_bytes  # the reference's copy and the candidate's
    calls = int(capacity_bytes * KEPT_INPUTS_SHARE) // per_call
    return max(1, min(requested, calls))


def host_memory_bytes() -> int | None:
    """MemTotal from /proc/meminfo: the same figure in every process on the host."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def capacity_bytes(device, memory_limit_bytes: int | None) -> int | None:
    """The memory the kept inputs live in: the device's total on CUDA; on CPU the host's, or the
    run's memory limit when that is smaller."""
    if device.type == "cuda":
        import torch

        return int(torch.cuda.get_device_properties(device).total_memory)
    sizes = [size for size in (host_memory_bytes(), memory_limit_bytes) if size]
    return min(sizes) if sizes else None


def fewer_trials_note(ran: int, requested: int) -> str:
    return (f"only {ran} of {requested} trials fit in memory with every trial's inputs kept alive "
            "at once: fewer trials, the same checks")
