"""How the harness's processes talk to the parent: settings on stdin (read, then stdin is closed
before any submission code loads), a JSON report on a pipe fd."""

from __future__ import annotations

import json
import math
import os
import sys


def started_ahead() -> None:
    """A trusted process may wait for its settings while the judged process runs as the same uid:
    non-dumpable, no process of that uid can trace it or read its memory; torch imported before the
    wait, so the wait is what it saves (profiler_agent.judge.started_ahead). No CUDA context before its
    turn unless CUDA_AHEAD says so (make_context_ahead): it may be started beside another judging's
    work on the GPU (judge.warm_pool)."""
    from profiler_agent.sandbox.privileges import make_undumpable

    make_undumpable()
    import torch  # noqa: F401


def import_for_backward(device: str) -> None:
    """What a backward problem's first call imports, imported while the process waits for its job:
    torch.autograd.grad with a given gradient imports torch's symbolic shapes, and sympy with them,
    at its first call (0.3-0.9 s of CPU in every process that calls it; about 35 MiB). On CUDA only:
    on a CPU host that import would run beside the judged process's timing."""
    if device != "cuda":
        return
    try:
        import torch.fx.experimental.symbolic_shapes  # noqa: F401
    except ImportError:  # another torch: its first backward call imports what it needs, as before
        pass


CUDA_AHEAD = "--cuda-ahead"
# with GPU_TURN, the process makes its CUDA setup when this line comes before its settings (a pool's
# process started during another judging: judge.warm_pool), at its job's turn when they come first
GPU_TURN = "--gpu-turn"
TURN_LINE = b"gpu turn\n"
# what such a process writes on stderr: the agent gives the turn once it waits, and a judging that takes
# it waits for a setup under way to end (judge.warm_pool.TurnKeeper)
WAITING_FOR_TURN = "[profiler_agent] imports done; the CUDA setup waits for its turn at the GPU"
TURN_DONE = "[profiler_agent] CUDA setup done; waiting for its job"


def add_cuda_ahead_argument(parser) -> None:
    parser.add_argument(CUDA_AHEAD, action="store_true",
                        help="make the CUDA context before waiting for the settings (judge.warm_pool: only "
                             "where no judging runs on this GPU meanwhile)")


def make_context_ahead(args) -> None:
    """The CUDA context (0.3-1 s) made before the settings come, where the agent said nothing runs
    on this GPU while this process starts (a pool refilled after a judging, judge.warm_pool)."""
    if getattr(args, "cuda_ahead", False):
        make_context(args.device)


def make_context(device: str) -> None:
    """This process's CUDA context, now (nothing on a CPU device)."""
    if device == "cuda":
        import torch

        torch.cuda.set_device(0)
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()


def read_turn_or_settings() -> dict | None:
    """None when the agent gives this process its turn at the GPU first (TURN_LINE: read_settings
    then), else the settings, which came first (no turn: its CUDA setup comes with its job)."""
    first = sys.stdin.buffer.readline()
    if first == TURN_LINE:
        return None
    return read_settings(first)


def read_settings(start: bytes = b"") -> dict:
    """Settings from stdin (after `start`, what was already read of them), then stdin becomes
    /dev/null so submission code finds nothing there."""
    settings = json.loads(start + sys.stdin.buffer.read() or b"{}")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return settings


def file_name(settings: dict, key: str) -> str:
    """A bundle file's name from the settings (processes are started before the job they judge is
    known, so the names come with the settings): a plain name, never a path."""
    name = settings.get(key)
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise ValueError(f"settings[{key!r}] is not a file name: {name!r}")
    return name


def take_job(settings: dict) -> None:
    """What a process started ahead learns of its job with the settings: the build folder of the
    candidate (torch reads TORCH_EXTENSIONS_DIR when it builds), and that its folders were filled
    since it started (the import system's cached listings are stale)."""
    import importlib

    extensions = settings.get("extensions_dir")
    if isinstance(extensions, str) and extensions:
        os.environ["TORCH_EXTENSIONS_DIR"] = extensions
    importlib.invalidate_caches()


def finite(value):
    """JSON has no NaN or inf: unmeasurable numbers become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


# Phase messages, sent ahead of the report: MESSAGE_START, a short ASCII text, MESSAGE_END. JSON
# escapes control characters, so the record separator that starts one never occurs in a report.
# "compiled": importing the candidate (its build) is done, the parent switches from the compile limits
# to the run limits; "build" / "built": a later build (from __init__ or forward) starts / ends, and is
# under the compile limits meanwhile; "stage NAME": what the child does now (memory-limit messages).
MESSAGE_START = b"\x1e"
MESSAGE_END = b"\n"
MAX_MESSAGE_BYTES = 64
PHASE_COMPILED = MESSAGE_START + b"compiled" + MESSAGE_END


def send_phase(fd: int, message: str) -> None:
    os.write(fd, MESSAGE_START + message.encode("ascii") + MESSAGE_END)


def send_phase_compiled(fd: int) -> None:
    send_phase(fd, "compiled")


def send_stage(fd: int, stage: str) -> None:
    send_phase(fd, f"stage {stage}")


def send_report(fd: int, report: dict) -> None:
    data = json.dumps(finite(report), allow_nan=False).encode()
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)
