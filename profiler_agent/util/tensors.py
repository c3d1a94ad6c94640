"""Moving, copying and measuring the inputs and outputs of a model call, and waiting for them."""

from __future__ import annotations

import torch


def to_device(values: list, device: torch.device) -> list:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def fresh_copies(values: list) -> list:
    """Own copies for one model, so neither model can see (or spoil) the other's inputs."""
    return [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]


def detached_copies(output):
    """The same (nested) structure with every tensor detached and cloned where it lies: a model that
    returns its own buffer (a stateful one) cannot change this copy on its next call."""
    if isinstance(output, list):
        return [detached_copies(item) for item in output]
    if isinstance(output, tuple):
        return tuple(detached_copies(item) for item in output)
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    return output


def flatten(output) -> list:
    """A model may return a tensor or (nested) tuples/lists of them; compare them leaf by leaf."""
    if isinstance(output, (tuple, list)):
        return [leaf for item in output for leaf in flatten(item)]
    return [output]


def tensor_bytes(values) -> int:
    return sum(t.numel() * t.element_size() for t in flatten(list(values)) if isinstance(t, torch.Tensor))


def describe(values: list) -> list[dict]:
    """Each input's dtype and shape (the dataset's metadata): `float32` and [4096, 1024] for a tensor,
    the type's name and [] for anything else."""
    return [{"dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape)} if isinstance(v, torch.Tensor)
            else {"dtype": type(v).__name__, "shape": []} for v in values]


def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def to_cpu_tree(output):
    """The same (nested) structure with every tensor copied to the CPU, detached and contiguous."""
    if isinstance(output, list):
        return [to_cpu_tree(item) for item in output]
    if isinstance(output, tuple):
        return tuple(to_cpu_tree(item) for item in output)
    if isinstance(output, torch.Tensor):
        return output.detach().to("cpu", copy=True).contiguous()
    return output
