"""The trusted verifier: decides correctness outside the process that ran submission code.

Started by the parent after the judged process and all its descendants are gone. It loads only the
reference (from the pristine bundle, never the judged process's working copy), draws each trial's
inputs again from the secret seed, computes the expected outputs itself and compares them with the
candidate outputs the judged process left in the exchange folder. Nothing the judged process
printed or reported can change this verdict.
"""

from profiler_agent.measure import timing  # noqa: F401  (binds the clock first, like the judged process)

import argparse
import os
import sys
import traceback
from pathlib import Path

from profiler_agent.util.submission_failures import SubmissionFailure, describe_error, submission_code
from profiler_agent.sandbox.child_channel import (add_cuda_ahead_argument, file_name, import_for_backward, make_context_ahead,
                                                  read_settings, send_report, started_ahead, take_job)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.graders.verifier")
    parser.add_argument("--reference-dir", required=True,
                        help="the folder the reference's pristine copy is written into (its name comes with the settings)")
    parser.add_argument("--outputs", required=True, help="the exchange folder with the candidate's outputs")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    add_cuda_ahead_argument(parser)
    return parser.parse_args(argv)


def new_verdict() -> dict:
    return {
        "correctness": {"passed": None, "trials": 0, "max_abs_err": None, "max_rel_err": None,
                        "atol": None, "rtol": None, "reason": None, "reference_numpy": None},
        "flags": [],
        "notes": [],  # what the verdict's reader should know (fewer trials than asked)
        "error": None,
        "inputs": None,  # trial 0's dtypes and shapes (tensors.describe): the dataset's metadata
        "case": None,  # the input case judged (bundles.input_cases)
        "cases": None,  # every case the reference declares: [{"name", "kind"}, ...]
    }


def verify(args, settings: dict, verdict: dict, repeat: bool = True, warm_up: bool = False) -> None:
    """The judged process's calls replayed on the reference, compared one by one. `repeat`: the plan
    ends with the repeat of trial 0 (the judgement's; the timing confirmation's profiled calls have
    none). `warm_up`: the reference gets the candidate's warm-up call first (inputs of trial
    `trials`), so a stateful reference is in the candidate's state."""
    import torch

    from profiler_agent.checkers import compare_outputs, ground_truth
    from profiler_agent.trials import output_exchange
    from profiler_agent.bundles import input_cases, module_loading
    from profiler_agent.util import tensors
    from profiler_agent.trials.correctness_trials import planned_calls, record_comparison, refill
    from profiler_agent.trials.input_draws import make_inputs

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(0)
    reference_file = Path(args.reference_dir).resolve() / file_name(settings, "reference")
    sys.path.insert(0, str(reference_file.parent))
    seed = settings["seed"]
    with submission_code("load_reference"):
        api = module_loading.reference_api(reference_file, settings.get("case"), bool(settings.get("correctness_only")))
        reference = module_loading.build_model(api.Model, api.get_init_inputs, seed, device, api.backward)
    # which cases there are, read here from the pristine reference: the agent judges the others after this one
    verdict["case"], verdict["cases"] = api.case.name, input_cases.describe(api.cases)
    outputs = Path(args.outputs)
    result = verdict["correctness"]
    # the judged process's plan, worked out again here from the same figures
    first_inputs = make_inputs(api.get_inputs, seed + 1, device)
    verdict["inputs"] = tensors.describe(first_inputs)
    plan, note = planned_calls(first_inputs, device, settings)
    del first_inputs
    if note:
        verdict["notes"].append(note)
    if not repeat:
        plan = [call for call in plan if not call.repeat]
    if warm_up:
        with submission_code("reference (warm-up)"), torch.no_grad():
            reference(*make_inputs(api.get_inputs, seed + 1 + settings["trials"], device))
    first = None  # trial 0's outputs (the reference's, the candidate's), for the repeat
    reproducible = True  # the reference gives trial 0's output again on the repeat: a call can be made out of turn
    kept = None  # the reference's inputs of the trial the repeat is written into
    for call in plan:
        # the reference alone runs here: it gets its calls in the same order, each input drawn again
        inputs = make_inputs(api.get_inputs, seed + 1 + call.trial, device)
        reference_inputs = tensors.fresh_copies(inputs)
        if call.repeat and kept is not None:
            reference_inputs = refill(kept, reference_inputs) or reference_inputs
        elif not call.repeat and call.trial == plan[-1].into:
            kept = reference_inputs
        with submission_code(f"reference ({call.label})"), torch.no_grad():
            expected = tensors.detached_copies(reference(*reference_inputs))
        if call.trial == 0 and not call.repeat:  # before the candidate's outputs: recorded whatever its verdict
            result["reference_numpy"] = ground_truth.check(
                api.reference_numpy, inputs, expected, settings.get("atol"), settings.get("rtol"))
        try:
            actual = output_exchange.load_output(outputs, call.trial, again=call.repeat)
        except output_exchange.MissingOutput as missing:
            record_comparison(result, call, compare_outputs.Comparison(False, reason=str(missing)))
            return
        outcome = compare_outputs.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"),
                                          getattr(reference, "output_names", None),
                                          getattr(reference, "scaled_outputs", frozenset()))
        if not record_comparison(result, call, outcome):
            return
        if not call.repeat and call.trial == 0:
            first = (expected, actual)
        elif call.repeat and first is not None:
            if nondeterministic(first, (expected, actual)):
                verdict["flags"].append("nondeterministic_output")
            reproducible = compare_outputs.compare_outputs(first[0], expected, settings.get("atol"), settings.get("rtol")).passed
    if repeat and not reproducible:
        verdict["notes"].append("the reference's output for trial 0's inputs changed on their repeat (a stateful "
                                "reference): the timed calls' outputs were checked in the judged process only")
    elif repeat and not verify_timed_calls(api, reference, settings, device, outputs, result):
        return
    result["passed"] = True


def verify_timed_calls(api, reference, settings: dict, device, outputs: Path, result: dict) -> bool:
    """The timed calls' outputs the judged process saved (profiler_agent.measure.timed_outputs), each
    compared with the reference's output for that call's values, made again here from the seed
    (profiler_agent.measure.input_sets.call_values). False, with the reason naming the call, at the
    first that differs."""
    import torch

    from profiler_agent.checkers import compare_outputs
    from profiler_agent.measure import input_sets
    from profiler_agent.trials import output_exchange
    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.util import tensors

    first_seed = settings["seed"] + 1 + settings["trials"]  # the timing's first draw (measurements.measure)
    bases = {}
    for call in output_exchange.timed_calls(outputs):
        try:
            draw, actual = output_exchange.load_timed_output(outputs, call, input_sets.DISTINCT_DRAWS)
        except output_exchange.MissingOutput as missing:
            result.update(passed=False, reason=f"timed call {call}: {missing}")
            return False
        if draw not in bases:
            bases[draw] = make_inputs(api.get_inputs, first_seed + draw, device)
        values = input_sets.call_values(bases[draw], settings["seed"], call)
        with submission_code(f"reference (timed call {call})"), torch.no_grad():
            expected = tensors.detached_copies(reference(*values))
        outcome = compare_outputs.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"),
                                                  getattr(reference, "output_names", None),
                                                  getattr(reference, "scaled_outputs", frozenset()))
        if not outcome.passed:
            result.update(passed=False, reason=f"timed call {call}: {outcome.reason}")
            return False
    return True


def nondeterministic(first: tuple, repeat: tuple) -> bool:
    """The candidate's repeat differs bit for bit from its first output where the reference's did
    not: a model whose state (or own nondeterminism) changes the repeat is not blamed for it."""
    from profiler_agent.checkers.compare_outputs import bitwise_equal

    (expected_first, actual_first), (expected_repeat, actual_repeat) = first, repeat
    return bitwise_equal(expected_first, expected_repeat) and not bitwise_equal(actual_first, actual_repeat)


def main(argv=None) -> None:
    args = parse_args(argv)
    started_ahead()
    import_for_backward(args.device)
    make_context_ahead(args)
    settings = read_settings()  # may come much later: this process may be started ahead of its turn
    take_job(settings)
    verdict = new_verdict()
    try:
        verify(args, settings, verdict)
    except SubmissionFailure as failure:  # the reference itself failed: the bundle's fault
        verdict["error"] = describe_error("submission", failure.stage, failure.exc)
        traceback.print_exception(failure.exc)
    except BaseException as exc:
        verdict["error"] = describe_error("harness", "verify", exc)
        traceback.print_exc()
    send_report(args.result_fd, verdict)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
