"""The judged process: loads a bundle, runs the correctness trials (the candidate's outputs go to the
exchange folder, where profiler_agent.graders.verifier decides the verdict), times both models.

The parent (profiler_agent.sandbox.process) starts it as `python -m profiler_agent.graders.judged_process` in a fresh session,
usually before its job is known (profiler_agent.judge.warm_pool): it imports torch, then waits. Settings that submission code must not see (the seed), and the job's file
names, arrive on stdin and are read before any submission code loads; the report leaves over the
pipe named by --result-fd, never over stdout, which belongs to the submission's own prints.
"""

from profiler_agent.measure import timing  # first: binds the clock before submission code can patch it

import argparse
import os
import resource
import sys
import traceback
from pathlib import Path

from profiler_agent.util.submission_failures import SubmissionFailure, describe_error, is_device_fault, submission_code
from profiler_agent.util.sizes import format_size
from profiler_agent.executors.build_watch import BuildWatch, fd_output_to
from profiler_agent.sandbox.child_channel import (add_cuda_ahead_argument, file_name, import_for_backward, make_context_ahead,
                                                  read_settings, send_phase_compiled, send_report, send_stage, take_job)


def mapped_bytes() -> int:
    """The address space this process has mapped now (VmSize in /proc/self/status), 0 if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def limit_address_space(limit: int) -> None:
    """RLIMIT_AS = the address space mapped now + `limit`, so it bounds the growth after the build.
    A CUDA build of torch maps gigabytes of address space at import (its libraries), on CPU too: a
    limit on the total would leave a CPU judgement no room to load numpy's libraries or start threads."""
    mapped = mapped_bytes()
    value = mapped + limit
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(resource.RLIMIT_AS, (value, value))
    print(f"[profiler_agent] address space: RLIMIT_AS {format_size(value)} = {format_size(mapped)} mapped after "
          f"the build + the {format_size(limit)} limit", file=sys.stderr, flush=True)


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
        "kernels": None,
        "durations_s": {"compile": None, "correctness": None, "timing": None, "kernel_census": None},
        "error": None,
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.graders.judged_process")
    parser.add_argument("--bundle", required=True, help="the folder the bundle is copied into (also the cwd)")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--compile-log", required=True, help="where output printed while importing the candidate goes")
    parser.add_argument("--outputs", required=True, help="where the candidate's outputs go, for the verifier")
    parser.add_argument("--result-fd", type=int, required=True)
    add_cuda_ahead_argument(parser)
    return parser.parse_args(argv)


def judge(args: argparse.Namespace, settings: dict, report: dict) -> None:
    import torch

    from profiler_agent.devices import device_info
    from profiler_agent.measure import kernel_census, kernel_symbols
    from profiler_agent.executors import build_tools
    from profiler_agent.bundles import module_loading
    from profiler_agent.measure.measurements import measure
    from profiler_agent.trials.correctness_trials import check_correctness
    from profiler_agent.trials.input_draws import make_inputs

    kind = args.device
    if kind == "cuda":
        torch.cuda.set_device(0)
    device = torch.device(kind)
    reference_name, candidate_name = file_name(settings, "reference"), file_name(settings, "candidate")
    report["device"] = device_info.describe_device(kind)

    bundle = Path(args.bundle).resolve()
    sys.path.insert(0, str(bundle))  # bundles import their sibling files
    send_stage(args.result_fd, "load_reference")
    with submission_code("load_reference"):
        api = module_loading.reference_api(bundle / reference_name, settings.get("case"),
                                           bool(settings.get("correctness_only")))
    report["case"] = api.case.name  # the parent takes the verifier's word for it
    # which peak applies is the reference's choice: read before the candidate could change it
    settings["reference_allows_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    settings["reference_allows_tf32_convolution"] = bool(torch.backends.cudnn.allow_tf32)

    build_tools.install()  # the precompiled header, narrow CUDA headers, the nvcc front
    builds = BuildWatch(args.result_fd, args.compile_log)
    builds.install()  # before the candidate runs: a build in __init__ or forward is compile time too
    modules_before = set(sys.modules)
    send_stage(args.result_fd, "load_candidate")
    started = timing.now_s()
    try:
        # load_inline builds here, so the time to import the candidate is its compile time
        with fd_output_to(args.compile_log), submission_code("load_candidate"):
            cand_module = module_loading.import_file(bundle / candidate_name, "candidate")
    finally:
        report["durations_s"]["compile"] = timing.now_s() - started
    builds.imported = True
    send_phase_compiled(args.result_fd)  # the parent switches to the run's time and memory limits
    with submission_code("load_candidate"):
        ModelNew = module_loading.attribute(cand_module, "ModelNew", candidate_name)

    limit = settings.get("memory_limit_bytes")
    if limit and kind == "cpu":
        # set after the build: a compile needs far more room than judging a small kernel
        limit_address_space(limit)

    def phase(stage: str, run):
        """Run one phase; a build inside it is compile time, not the phase's."""
        send_stage(args.result_fd, stage)
        before, started = builds.later_builds_s, timing.now_s()
        try:
            return run()
        finally:
            built = builds.later_builds_s - before
            report["durations_s"]["compile"] += built
            if stage in report["durations_s"]:
                report["durations_s"][stage] = timing.now_s() - started - built

    seed = settings["seed"]

    def build_models():
        with submission_code("build_models"):
            return (module_loading.build_model(api.Model, api.get_init_inputs, seed, device, api.backward),
                    module_loading.build_model(ModelNew, api.get_init_inputs, seed, device, api.backward))

    reference, candidate = phase("build_models", build_models)
    passed = phase("correctness", lambda: check_correctness(
        reference, candidate, api.get_inputs, device, settings, report, Path(args.outputs)))
    # after the first calls: a constructor or a first forward may build and load the extension
    native_dirs = [bundle] + [Path(p) for p in [os.environ.get("TORCH_EXTENSIONS_DIR")] if p]
    loaded_native = builds.later_builds > 0 or module_loading.uses_custom_kernel(cand_module, modules_before, native_dirs)
    if not loaded_native:
        report["flags"].append("no_custom_kernel")  # the kernel census decides again once it passes
    if not passed:
        return  # a wrong answer is not timed
    if settings.get("correctness_only") or not api.case.timed:
        return  # a test run, or a case of kind "test": its trials are all it asked for
    phase("timing", lambda: measure(reference, candidate, api.get_inputs, device, settings, report, Path(args.outputs)))
    if report["correctness"]["passed"] is False:
        return  # a timed output was wrong
    # after timing: a profiler session must not perturb the timed calls
    draw_inputs = lambda: make_inputs(api.get_inputs, seed + 1, device)  # noqa: E731  (trial 0's)
    def census():
        own = None
        if kind == "cuda":  # names from the run's own build: its folder, the bundle, JIT caches
            build_dirs = native_dirs + [kernel_symbols.default_cupy_cache()]
            own = kernel_symbols.own_kernel_names(build_dirs, kernel_symbols.default_triton_cache())
        kernel_census.record(report, reference, candidate, draw_inputs, device, loaded_native, own)

    if settings.get("kernel_census", True):  # else the agent takes it from ncu's record (judge.timing_confirmation)
        phase("kernel_census", census)


def get_ready() -> None:
    """What every judging needs and no submission code touches, done before the job is known:
    torch and the harness imported (seconds; profiler_agent.judge.warm_pool). No CUDA context yet: this
    process may be started beside another judging's work on the GPU."""
    import torch  # noqa: F401

    import profiler_agent.bundles.module_loading  # noqa: F401
    import profiler_agent.measure.measurements  # noqa: F401
    import profiler_agent.trials.correctness_trials  # noqa: F401


def main(argv=None) -> None:
    args = parse_args(argv)
    report = new_report(args.device)
    try:
        get_ready()
        make_context_ahead(args)
        if args.cuda_ahead:  # waiting in the pool: otherwise its job comes at once, for any problem
            import_for_backward(args.device)
        settings = read_settings()  # may come much later: this process is started ahead of its job
        take_job(settings)
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
