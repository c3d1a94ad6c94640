"""Candidate outputs handed from the judged process to the trusted verifier, as torch.save files.

The judged process writes them; the verifier reads them only after that process and all its
descendants are gone, with `weights_only=True` so a crafted file cannot run code when loaded.
"""

from __future__ import annotations

from pathlib import Path

import torch

from profiler_agent.util.tensors import to_cpu_tree


def output_path(directory: Path, trial: int, again: bool = False) -> Path:
    return Path(directory) / (f"trial-{trial}-again.pt" if again else f"trial-{trial}.pt")


def save_output(directory: Path, trial: int, output, again: bool = False) -> None:
    torch.save(to_cpu_tree(output), output_path(directory, trial, again))


class MissingOutput(Exception):
    pass


def load_output(directory: Path, trial: int, again: bool = False):
    path = output_path(directory, trial, again)
    if path.is_symlink() or not path.is_file():  # a link or a FIFO could stall or mislead the verifier
        raise MissingOutput("no output (the judged process ended or stopped before writing it)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or crafted file is the candidate's wrong answer
        raise MissingOutput(f"unreadable output: {type(exc).__name__}") from exc
