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

from profiler_agent.harness.guard import SubmissionFailure, describe_error, submission_code
from profiler_agent.harness.wire import read_settings, send_report


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.correctness.verify")
    parser.add_argument("--reference", required=True, help="the reference file (pristine copy)")
    parser.add_argument("--outputs", required=True, help="the exchange folder with the candidate's outputs")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    return parser.parse_args(argv)


def new_verdict() -> dict:
    return {
        "correctness": {"passed": None, "trials": 0, "max_abs_err": None, "max_rel_err": None,
                        "atol": None, "rtol": None, "reason": None, "reference_numpy": None},
        "flags": [],
        "error": None,
    }


def verify(args, settings: dict, verdict: dict) -> None:
    import torch

    from profiler_agent.correctness import compare, exchange, ground_truth
    from profiler_agent.harness import loading, tensors
    from profiler_agent.correctness.trials import make_inputs, record_comparison

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(0)
    reference_file = Path(args.reference).resolve()
    sys.path.insert(0, str(reference_file.parent))
    seed = settings["seed"]
    with submission_code("load_reference"):
        api = loading.reference_api(reference_file)
        reference = loading.build_model(api.Model, api.get_init_inputs, seed, device)
    outputs = Path(args.outputs)
    result = verdict["correctness"]
    for trial in range(settings["trials"]):
        inputs = make_inputs(api.get_inputs, seed + 1 + trial, device)
        with submission_code("reference"), torch.no_grad():
            expected = reference(*tensors.fresh_copies(inputs))
        if trial == 0:  # before the candidate's outputs: recorded whatever its verdict
            result["reference_numpy"] = ground_truth.check(
                api.reference_numpy, inputs, expected, settings.get("atol"), settings.get("rtol"))
        try:
            actual = exchange.load_output(outputs, trial)
        except exchange.MissingOutput as missing:
            result.update(passed=False, trials=trial + 1, reason=str(missing))
            return
        outcome = compare.compare_outputs(expected, actual, settings.get("atol"), settings.get("rtol"))
        if not record_comparison(result, trial, outcome):
            return
        if trial == 0:
            try:
                again = exchange.load_output(outputs, 0, again=True)
            except exchange.MissingOutput:
                again = None
            if again is not None and not compare.bitwise_equal(actual, again):
                verdict["flags"].append("nondeterministic_output")
    result["passed"] = True


def main(argv=None) -> None:
    args = parse_args(argv)
    settings = read_settings()
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
