"""The trusted checking process of a timing confirmation (profiler_agent.judge.timing_confirmation).

Started after the profiled process and all its descendants are gone, like the verifier, and loads
only the reference, from the pristine bundle: no submission code ever ran here. It verifies the
outputs the profiled calls left in the exchange folder (profiler_agent.graders.verifier, with the
confirmation's secret seed), takes the kernel census from ncu's record (the names the profiled
process's build defined, read here), then times the reference itself with the judged process's timer (L2
flushed before each call; synchronized when the judgement had to be), so the agent has a reference
median that no submission code could inflate.
"""

from profiler_agent.measure import timing  # first: binds the clock before anything else loads

import argparse
import os
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path

from profiler_agent.sandbox import run_cpu
from profiler_agent.util.submission_failures import SubmissionFailure, describe_error, guarded, submission_code
from profiler_agent.sandbox.child_channel import (add_cuda_ahead_argument, file_name, import_for_backward, make_context_ahead,
                                                  read_settings, send_report, started_ahead, take_job)

process_cpu_ns = time.process_time_ns  # bound before the reference's code loads, as the clock is


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.graders.confirmation_check")
    parser.add_argument("--reference-dir", required=True,
                        help="the folder the reference's pristine copy is written into (its name comes with the settings)")
    parser.add_argument("--outputs", required=True, help="the exchange folder with the profiled calls' outputs")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    add_cuda_ahead_argument(parser)
    return parser.parse_args(argv)


def time_reference(args, settings: dict) -> float:
    """The reference's median per-call time, timed as the judged process times it."""
    import torch

    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.bundles import module_loading

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(0)
    reference_file = Path(args.reference_dir).resolve() / file_name(settings, "reference")
    if str(reference_file.parent) not in sys.path:
        sys.path.insert(0, str(reference_file.parent))
    seed = settings["seed"]
    with submission_code("load_reference"):
        api = module_loading.reference_api(reference_file, settings.get("case"))  # the case confirmed
        model = module_loading.build_model(api.Model, api.get_init_inputs, seed, device, api.backward)
    inputs = make_inputs(api.get_inputs, seed + 2 + settings["trials"], device)
    options = settings.get("reference_timing") or {}
    if device.type == "cuda":
        timer = timing.SynchronizedCudaTimer(device) if options.get("synchronized") else timing.CudaTimer(device)
    else:
        timer = timing.CpuTimer()
    plan = timing.TimingPlan(budget_s=options.get("budget_s", 1.0))
    # net of the pair's own time where the judged process's figure is (measure.measurements)
    control = (lambda: None) if device.type == "cuda" and not options.get("synchronized") else None
    with torch.no_grad():
        timings = timing.time_interleaved({"reference": guarded("reference", lambda: model(*inputs))}, timer, plan,
                                          control=control)
    return statistics.median(timings.without_floor().times_ms["reference"])


def verify_demonstration(args, settings: dict, report: dict) -> bool:
    """The CPU demonstration's outputs (profiler_agent.judge.cpu_demonstration), each compared with the
    reference's on the same values, made again here from the seed's bases and the agent's secret; and
    how long the harness's own work in its stretch takes here: making each call's values and saving an
    output of the reference's size. False, with the verdict's reason, at the first wrong output.
    Both are measured as the demonstration was, in CPU time (sandbox.run_cpu), which this host's load
    does not stretch: the harness's work as the process's CPU time, the reference's as the least wall
    time its work takes."""
    import torch

    from profiler_agent.bundles import module_loading
    from profiler_agent.checkers import compare_outputs
    from profiler_agent.graders import verifier
    from profiler_agent.measure import input_sets
    from profiler_agent.trials import output_exchange
    from profiler_agent.trials.input_draws import make_inputs

    demonstration, seed, device = settings["demonstration"], settings["seed"], torch.device("cpu")
    calls, secret = demonstration["calls"], demonstration["secret"]
    reference_file = Path(args.reference_dir).resolve() / file_name(settings, "reference")
    if str(reference_file.parent) not in sys.path:
        sys.path.insert(0, str(reference_file.parent))
    with submission_code("load_reference"):
        api = module_loading.reference_api(reference_file, settings.get("case"))  # the case confirmed
        reference = module_loading.build_model(api.Model, api.get_init_inputs, seed, device, api.backward)
    bases = input_sets.draw_bases(api.get_inputs, make_inputs(api.get_inputs, seed + 1, device), seed + 1, device, calls)
    shifted = input_sets.ShiftedValues(bases, seed)
    verdict = verifier.new_verdict()
    report["verdict"] = verdict
    result = verdict["correctness"]
    harness_ns = []  # per call: making its values and a checksum of an output, as the target does (CPU time)
    reference_ns = []  # per call: the least wall time of the reference's work on the same values
    reference_s = []  # per call: the reference on this host's clock, for the log
    committed = output_exchange.read_checksums(Path(args.outputs) / output_exchange.CHECKSUMS)
    with torch.no_grad():
        # the candidate's warm-up (for a stateful reference), its checksum taken as the target takes it
        output_exchange.output_checksum(reference(*shifted.values(seed, calls)))
        own = [os.getpid()]
        for call in range(calls):
            started = process_cpu_ns()
            values = shifted.values(secret, call)
            made = process_cpu_ns() - started
            before, started = run_cpu.sample(own), timing.now_s()
            with submission_code(f"reference (demonstrated call {call})"):
                expected = reference(*values)
            reference_s.append(timing.now_s() - started)
            reference_ns.append(run_cpu.used_between(before, run_cpu.sample(own)).wall_floor_ns())
            started = process_cpu_ns()
            output_exchange.output_checksum(expected)
            harness_ns.append(made + process_cpu_ns() - started)
            try:
                actual = output_exchange.load_output(Path(args.outputs), call)
            except output_exchange.MissingOutput as missing:
                result.update(passed=False, reason=f"demonstrated call {call}: {missing}")
                return False
            if call >= len(committed) or output_exchange.output_checksum(actual) != committed[call]:
                # not a wrong answer (a nondeterministic candidate differs so too): the time is not shown
                report["uncommitted"] = (f"demonstrated call {call}: the output saved after the stretch is not the one "
                                         "committed in it")
                result["passed"] = True
                return True
            outcome = compare_outputs.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"),
                                                      getattr(reference, "output_names", None),
                                                      getattr(reference, "scaled_outputs", frozenset()))
            if not outcome.passed:
                result.update(passed=False, reason=f"demonstrated call {call}: {outcome.reason}")
                return False
    result["passed"] = True
    report["harness_ms"] = statistics.median(harness_ns) / 1e6 * calls
    report["reference_floor_ms"] = statistics.median(reference_ns) / 1e6
    report["reference_ms"] = statistics.median(reference_s) * 1000
    return True


def check(args, settings: dict, report: dict) -> None:
    from profiler_agent.graders import verifier

    durations = report["durations_s"]
    started = timing.now_s()
    if settings.get("demonstration"):  # it times the reference too, on the demonstration's values
        verify_demonstration(args, settings, report)
        durations["verify"] = timing.now_s() - started
        return
    # the build's kernel names (a cuobjdump per shared object: tenths of a second) read beside the verification
    own_names = OwnNames(settings["census"]) if settings.get("census") else None
    if settings.get("verify"):
        verdict = verifier.new_verdict()
        # the profiled process's calls: a warm-up, then one per trial, no repeat
        verifier.verify(args, settings, verdict, repeat=False, warm_up=True)
        verdict["correctness"].pop("reference_numpy", None)
        report["verdict"] = verdict
        durations["verify"] = timing.now_s() - started
        if verdict["correctness"].get("passed") is not True:
            return  # a wrong answer: its time does not matter
    if settings.get("census"):
        started = timing.now_s()
        take_census(settings["census"], own_names, report)
        durations["census"] = timing.now_s() - started
    started = timing.now_s()
    report["reference_ms"] = time_reference(args, settings)
    durations["reference_timing"] = timing.now_s() - started


class OwnNames:
    """The names the profiled process's build defined (kernel_symbols.own_kernel_names), read in a
    thread of their own from the start of the check: `names()` waits for them, or raises what failed."""

    def __init__(self, census: dict):
        self._census, self._names, self._error = census, None, None
        self._thread = threading.Thread(target=self._read, name="own-kernel-names", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        from profiler_agent.measure import kernel_symbols

        try:
            self._names = kernel_symbols.own_kernel_names([Path(d) for d in self._census["build_dirs"]],
                                                          Path(self._census["triton_cache"]))
        except Exception as exc:  # noqa: BLE001  (handed to names())
            self._error = exc

    def names(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._names


def take_census(census: dict, own_names: OwnNames, report: dict) -> None:
    """The kernel census from the kernel names ncu recorded and the names the profiled process's
    build defined (read here, outside any process that ran submission code)."""
    from profiler_agent.measure import kernel_census

    try:
        own = own_names.names()
        loaded_native = bool(census.get("loaded_native"))
        taken = kernel_census.Census("cuda_kernels", list(census["candidate"]), list(census["reference"]),
                                     kernel_census.own_names_or_none(own, loaded_native))
        report["census"] = taken.as_report()
        report["custom_kernel"] = taken.has_custom_kernel(loaded_native)
    except Exception as exc:  # noqa: BLE001  (no census is an undecided flag, never a failed check)
        print(f"[profiler_agent] confirm_check: no kernel census: {type(exc).__name__}: {exc}", file=sys.stderr)


def main(argv=None) -> None:
    args = parse_args(argv)
    started_ahead()
    import_for_backward(args.device)
    make_context_ahead(args)
    settings = read_settings()  # may come much later: this process may be started ahead of its turn
    take_job(settings)
    report = {"verdict": None, "reference_ms": None, "error": None, "durations_s": {}}
    try:
        check(args, settings, report)
    except SubmissionFailure as failure:  # the reference itself failed: the bundle's fault
        report["error"] = describe_error("submission", failure.stage, failure.exc)
        traceback.print_exception(failure.exc)
    except BaseException as exc:
        report["error"] = describe_error("harness", "confirm_check", exc)
        traceback.print_exc()
    send_report(args.result_fd, report)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
