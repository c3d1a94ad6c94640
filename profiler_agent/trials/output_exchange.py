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


def output_checksum(output) -> int:
    """Adler-32 over an output's tensors (dtype, shape, bytes) and the repr of anything else: what a
    demonstration commits to for each call before it says it is done (profiler_agent.judge.cpu_demonstration).
    Its saved output must match it and be right, so a process cannot commit to an output it has not
    computed; a cryptographic hash would buy nothing more and cost more."""
    import zlib

    from profiler_agent.util.tensors import flatten

    checksum = 1
    for leaf in flatten(output):
        if isinstance(leaf, torch.Tensor):
            leaf = leaf.detach().cpu().contiguous()
            checksum = zlib.adler32(f"{leaf.dtype}{tuple(leaf.shape)}".encode(), checksum)
            if leaf.numel():
                checksum = zlib.adler32(leaf.view(-1).view(torch.uint8).numpy(), checksum)
        else:
            checksum = zlib.adler32(repr(leaf).encode(), checksum)
    return checksum


CHECKSUMS = "checksums.txt"


def read_checksums(path: Path) -> list[int]:
    try:
        return [int(word) for word in Path(path).read_text().split()]
    except (OSError, UnicodeDecodeError, ValueError):
        return []


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


# The outputs of timed calls the judged process checked (profiler_agent.measure.timed_outputs): the
# call's number and the draw its values were made from, which the verifier needs to make them again.
TIMED = "timed-{call}.pt"


def save_timed_output(directory: Path, call: int, draw: int, output) -> None:
    torch.save({"call": call, "draw": draw, "output": to_cpu_tree(output)}, Path(directory) / TIMED.format(call=call))


def remove_timed_output(directory: Path, call: int) -> None:
    (Path(directory) / TIMED.format(call=call)).unlink(missing_ok=True)


def timed_calls(directory: Path) -> list[int]:
    """The numbers of the timed calls whose outputs were saved, in order."""
    calls = []
    for path in Path(directory).glob("timed-*.pt"):
        number = path.name[len("timed-"):-len(".pt")]
        if number.isdigit():
            calls.append(int(number))
    return sorted(calls)


def load_timed_output(directory: Path, call: int, draws: int) -> tuple[int, object]:
    """(the draw, the output) of timed call `call`; MissingOutput when the file is not one the harness
    writes (a link, unreadable, another call's, a draw outside 0..draws-1)."""
    path = Path(directory) / TIMED.format(call=call)
    if path.is_symlink() or not path.is_file():
        raise MissingOutput("no output (not a file the harness writes)")
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise MissingOutput(f"unreadable output: {type(exc).__name__}") from exc
    if (not isinstance(saved, dict) or saved.get("call") != call or type(saved.get("draw")) is not int
            or not 0 <= saved["draw"] < draws or "output" not in saved):
        raise MissingOutput("unreadable output: not what the harness saves for a timed call")
    return saved["draw"], saved["output"]
