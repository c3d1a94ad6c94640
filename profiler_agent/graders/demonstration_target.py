"""The process that shows on the CPU how long the candidate takes, to an agent that cannot trust what
the judged process reported (profiler_agent.judge.cpu_demonstration): there is no device profiler
to read a record from, so the agent times from outside a stretch in which this process must produce
outputs that the trusted check verifies.

It loads the candidate as the judged process did (the same build), draws the bases from the seed
(read on stdin before any submission code loads), calls the candidate once as a warm-up, then says
WAITING on its result pipe and waits for the values file: the agent reads the CPU time of the run's
processes, then writes a fresh secret there. Each of the `--calls` calls then runs on values made from
a base and that secret (profiler_agent.measure.input_sets.ShiftedValues), and it keeps each output's
checksum; the checksums go to the exchange folder, then it says DONE, where the agent reads the CPU
time again and takes them, and waits until the agent says it has. The outputs are made again after
and saved: each must match its checksum and be right. No output can be made before the secret exists,
and none committed at DONE can be computed later.

It runs submission code: nothing it reports is read but its two messages and the outputs, which the
trusted check verifies.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from profiler_agent.sandbox.child_channel import file_name, read_settings, send_stage, take_job

WAITING = "waiting_for_values"
DONE = "values_done"
POLL_S = 0.0002


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.graders.demonstration_target")
    parser.add_argument("--bundle", required=True, help="the folder the bundle is copied into (also the cwd)")
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--outputs", required=True, help="exchange folder: call i's output as trial i")
    parser.add_argument("--values-file", required=True, help="where the agent writes the calls' secret")
    parser.add_argument("--result-fd", type=int, required=True)
    return parser.parse_args(argv)


def acknowledgement(values_file: Path) -> Path:
    """Where the agent writes that it has taken what it takes at DONE (the checksums, the CPU time)."""
    return values_file.with_name(values_file.name + ".taken")


def wait_for_secret(path: Path) -> int:
    while True:
        try:
            return int(path.read_text())
        except (OSError, ValueError):  # not there yet (the agent renames it in whole)
            time.sleep(POLL_S)


def main(argv=None) -> None:
    args = parse_args(argv)
    import torch

    settings = read_settings()  # before any submission code loads; stdin is closed after
    seed = settings.get("seed")
    if not isinstance(seed, int):
        sys.exit("[profiler_agent] demonstration_target: no seed on stdin")
    take_job(settings)
    reference_name, candidate_name = file_name(settings, "reference"), file_name(settings, "candidate")

    from profiler_agent.bundles import module_loading
    from profiler_agent.executors import build_tools
    from profiler_agent.measure import input_sets
    from profiler_agent.trials import output_exchange
    from profiler_agent.trials.input_draws import make_inputs

    device = torch.device("cpu")
    bundle = Path(args.bundle).resolve()
    sys.path.insert(0, str(bundle))  # bundles import their sibling files
    api = module_loading.reference_api(bundle / reference_name, settings.get("case"))  # the case confirmed
    build_tools.install()  # as the judged process built it: the same build is found
    module = module_loading.import_file(bundle / candidate_name, "candidate")
    model_class = module_loading.attribute(module, "ModelNew", candidate_name)
    model = module_loading.build_model(model_class, api.get_init_inputs, seed, device, api.backward)
    first_seed = seed + 1
    bases = input_sets.draw_bases(api.get_inputs, make_inputs(api.get_inputs, first_seed, device), first_seed,
                                  device, args.calls)
    shifted = input_sets.ShiftedValues(bases, seed)
    outputs = Path(args.outputs)
    with torch.no_grad():
        # lazy initialization (the model's, the checksum's) is not timed
        output_exchange.output_checksum(model(*shifted.values(seed, args.calls)))
        send_stage(args.result_fd, WAITING)
        secret = wait_for_secret(Path(args.values_file))
        # each output is freed at once, as in the judged process (kept alive, every call's allocation
        # would be fresh pages: a C++ ReLU over 16 MiB took 7x longer so)
        checksums = [output_exchange.output_checksum(model(*shifted.values(secret, call))) for call in range(args.calls)]
        (outputs / output_exchange.CHECKSUMS).write_text("\n".join(map(str, checksums)) + "\n")
        send_stage(args.result_fd, DONE)
        wait_for_secret(acknowledgement(Path(args.values_file)))  # the agent has read its CPU time: idle till then
        for call in range(args.calls):  # made again, after the clock: saved for the check
            output_exchange.save_output(outputs, call, model(*shifted.values(secret, call)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
