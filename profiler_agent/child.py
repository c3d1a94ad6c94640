"""The judged process: loads a bundle, checks the candidate against the reference, times both.

The parent (profiler_agent.sandbox) starts it as `python -m profiler_agent.child` in a fresh session.
Settings that submission code must not see (the seed) arrive on stdin and are read before any
submission code loads; the report leaves over the pipe named by --result-fd, never over stdout,
which belongs to the submission's own prints.
"""

from profiler_agent import timing  # first: binds the clock before submission code can patch it

import argparse
import contextlib
import json
import math
import os
import resource
import sys
import traceback
from pathlib import Path


class SubmissionFailure(Exception):
    """Something submission code raised (or a device fault it caused), tagged with the stage."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{stage}: {exc!r}")
        self.stage = stage
        self.exc = exc


def as_submission_failure(stage: str, exc: BaseException) -> BaseException:
    if isinstance(exc, (SubmissionFailure, KeyboardInterrupt)):
        return exc
    return SubmissionFailure(stage, exc)


@contextlib.contextmanager
def submission_code(stage: str):
    """Marks a call into submission code: what it raises, SystemExit included, is the submission's."""
    try:
        yield
    except BaseException as exc:
        raise as_submission_failure(stage, exc) from exc


def guarded(stage: str, fn):
    """Like submission_code, for calls in the timed loop (a bare try costs nothing when nothing fails)."""

    def call():
        try:
            return fn()
        except BaseException as exc:
            raise as_submission_failure(stage, exc) from exc

    return call


def is_device_fault(exc: BaseException) -> bool:
    """A CUDA error surfacing in harness code (at a synchronize) was caused by the kernel that ran."""
    return type(exc).__name__ == "AcceleratorError" or "CUDA error" in str(exc)


def qualified_type(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def describe_error(origin: str, stage: str, exc: BaseException) -> dict:
    return {
        "origin": origin,  # "submission" or "harness"
        "stage": stage,
        "type": qualified_type(exc),
        "message": str(exc)[-8000:],
        "traceback": "".join(traceback.format_exception(exc))[-16000:],
    }


@contextlib.contextmanager
def fd_output_to(path: str):
    """Send fds 1 and 2 to `path`: build tools (ninja, nvcc) write there directly, not via sys.stdout."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(target, 1)
    os.dup2(target, 2)
    os.close(target)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def new_report(kind: str) -> dict:
    return {
        "device": {"kind": kind},
        "correctness": {
            "passed": None,
            "trials": 0,
            "max_abs_err": None,
            "max_rel_err": None,
            "atol": None,
            "rtol": None,
            "reason": None,
        },
        "timing": {"reference": None, "candidate": None},
        "metrics": {"flops": None, "bytes": None},
        "telemetry": None,
        "flags": [],
        "durations_s": {"compile": None, "correctness": None, "timing": None},
        "error": None,
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.child")
    parser.add_argument("--bundle", required=True, help="the bundle copy to judge (also the cwd)")
    parser.add_argument("--reference", required=True, help="file name of the reference in the bundle")
    parser.add_argument("--candidate", required=True, help="file name of the candidate in the bundle")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--compile-log", required=True, help="where output printed while importing the candidate goes")
    parser.add_argument("--result-fd", type=int, required=True)
    return parser.parse_args(argv)


def read_settings() -> dict:
    """Settings from stdin, then stdin becomes /dev/null so submission code finds nothing there."""
    settings = json.loads(sys.stdin.buffer.read() or b"{}")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return settings


def _finite(value):
    """JSON has no NaN or inf: unmeasurable numbers become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def send_report(fd: int, report: dict) -> None:
    data = json.dumps(_finite(report), allow_nan=False).encode()
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def poison_freed_memory(device, nbytes: int) -> None:
    """Leave NaN bytes in the block the caching allocator hands out next, so a candidate returning
    uninitialized memory cannot pass by finding a stale correct result there."""
    import torch

    if device.type == "cuda" and nbytes:
        torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(0xFF)


def make_inputs(get_inputs, seed: int, device) -> list:
    import torch

    from profiler_agent import tensors

    torch.manual_seed(seed)
    with submission_code("get_inputs"):
        inputs = list(get_inputs())
    return tensors.to_device(inputs, device)


def check_correctness(reference, candidate, get_inputs, device, settings: dict, report: dict) -> bool:
    import torch

    from profiler_agent import correctness, tensors

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


def measure(reference, candidate, get_inputs, device, settings: dict, report: dict) -> None:
    import torch

    from profiler_agent import device_info, metrics, nvml, tensors, telemetry

    inputs = make_inputs(get_inputs, settings["seed"] + 1 + settings["trials"], device)
    ref_inputs, cand_inputs = tensors.fresh_copies(inputs), tensors.fresh_copies(inputs)
    calls = {
        "reference": guarded("reference", lambda: reference(*ref_inputs)),
        "candidate": guarded("candidate", lambda: candidate(*cand_inputs)),
    }
    if device.type == "cuda":
        timer = timing.CudaTimer(device)
        sampler = telemetry.NvmlSampler(nvml.handle_by_uuid(device_info.cuda_uuid(0)))
    else:
        timer = timing.CpuTimer()
        sampler = contextlib.nullcontext()
    try:
        with torch.no_grad(), sampler:
            times = timing.time_interleaved(calls, timer)
    except SubmissionFailure:
        raise
    except Exception as exc:
        if is_device_fault(exc):
            raise SubmissionFailure("timing", exc) from exc
        raise
    report["timing"] = {name: timing.summarize(values) for name, values in times.items()}

    report["telemetry"] = sampler.telemetry() if device.type == "cuda" else telemetry.empty_telemetry()
    with torch.no_grad(), submission_code("reference"):
        output = reference(*tensors.fresh_copies(inputs))
    report["metrics"]["bytes"] = tensors.tensor_bytes(inputs) + tensors.tensor_bytes([output])
    report["metrics"]["flops"] = metrics.count_flops(reference, tensors.fresh_copies(inputs))
    if device.type == "cuda":
        del output
        torch.cuda.reset_peak_memory_stats()
        with torch.no_grad(), submission_code("candidate"):
            candidate(*cand_inputs)
            synchronize(device)
        report["telemetry"]["peak_memory_bytes"] = torch.cuda.max_memory_allocated()


def judge(args: argparse.Namespace, settings: dict, report: dict) -> None:
    import torch

    from profiler_agent import device_info, loading, tensors

    kind = args.device
    if kind == "cuda":
        torch.cuda.set_device(0)
    device = torch.device(kind)
    report["device"] = device_info.describe_device(kind)

    bundle = Path(args.bundle).resolve()
    sys.path.insert(0, str(bundle))  # bundles import their sibling files
    with submission_code("load_reference"):
        ref_module = loading.import_file(bundle / args.reference, "reference")
        Model = loading.attribute(ref_module, "Model", args.reference)
        get_inputs = loading.attribute(ref_module, "get_inputs", args.reference)
        get_init_inputs = loading.attribute(ref_module, "get_init_inputs", args.reference)

    modules_before = set(sys.modules)
    started = timing.now_s()
    try:
        # load_inline builds here, so the time to import the candidate is its compile time
        with fd_output_to(args.compile_log), submission_code("load_candidate"):
            cand_module = loading.import_file(bundle / args.candidate, "candidate")
    finally:
        report["durations_s"]["compile"] = timing.now_s() - started
    with submission_code("load_candidate"):
        ModelNew = loading.attribute(cand_module, "ModelNew", args.candidate)
    native_dirs = [bundle] + [Path(p) for p in [os.environ.get("TORCH_EXTENSIONS_DIR")] if p]
    if not loading.uses_custom_kernel(cand_module, modules_before, native_dirs):
        report["flags"].append("no_custom_kernel")

    limit = settings.get("memory_limit_bytes")
    if limit and kind == "cpu":
        # set after the build: a compile needs far more room than judging a small kernel
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    seed = settings["seed"]
    with submission_code("build_models"):
        torch.manual_seed(seed)
        init_inputs = list(get_init_inputs())
        # the same seed before each constructor, so both models draw the same parameters
        torch.manual_seed(seed)
        reference = Model(*tensors.fresh_copies(init_inputs)).to(device)
        torch.manual_seed(seed)
        candidate = ModelNew(*tensors.fresh_copies(init_inputs)).to(device)

    started = timing.now_s()
    passed = check_correctness(reference, candidate, get_inputs, device, settings, report)
    report["durations_s"]["correctness"] = timing.now_s() - started
    if not passed:
        return  # a wrong answer is not timed
    started = timing.now_s()
    measure(reference, candidate, get_inputs, device, settings, report)
    report["durations_s"]["timing"] = timing.now_s() - started


def main(argv=None) -> None:
    args = parse_args(argv)
    settings = read_settings()
    report = new_report(args.device)
    try:
        judge(args, settings, report)
    except SubmissionFailure as failure:
        report["error"] = describe_error("submission", failure.stage, failure.exc)
        print(f"[profiler_agent] error in submission code ({failure.stage}):", file=sys.stderr)
        traceback.print_exception(failure.exc)
    except BaseException as exc:
        if is_device_fault(exc):
            report["error"] = describe_error("submission", "device", exc)
        else:
            report["error"] = describe_error("harness", "harness", exc)
        print("[profiler_agent] error in the harness:", file=sys.stderr)
        traceback.print_exc()
    send_report(args.result_fd, report)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip atexit hooks and threads a submission may have left behind


if __name__ == "__main__":
    main()
