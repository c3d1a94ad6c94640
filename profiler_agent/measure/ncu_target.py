"""The process Nsight Compute launches (`python -m profiler_agent.measure.ncu_target`, see profiler_agent.measure.ncu):
imports the reference (for get_inputs / get_init_inputs) and the candidate, makes seeded inputs on the
device, calls the candidate once as a warm-up outside any NVTX range, then `--calls` times, each call
inside the ranges `profiler_agent call <i>` / `candidate` that ncu's filter and parser look for.

It runs submission code, in the sandbox, after the verdict: nothing it does is trusted, and nothing
it reports is read but ncu's own output. On `--device cpu` (tests: no GPU, no ncu) the same calls run
without NVTX ranges, which CPU builds of torch do not have.
"""

import argparse
import sys
from pathlib import Path

from profiler_agent.measure.ncu import CALL_RANGE_PREFIX, CANDIDATE_RANGE


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.measure.ncu_target")
    parser.add_argument("--bundle", required=True, help="the bundle copy (also the cwd)")
    parser.add_argument("--reference", required=True, help="file name of the reference in the bundle")
    parser.add_argument("--candidate", required=True, help="file name of the candidate in the bundle")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--calls", type=int, required=True, help="profiled calls after the warm-up")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    import torch

    from profiler_agent.harness import loading
    from profiler_agent.harness.tensors import synchronize
    from profiler_agent.correctness.trials import make_inputs

    if args.device == "cuda":
        torch.cuda.set_device(0)
        push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    else:
        push, pop = (lambda _name: None), (lambda: None)
    device = torch.device(args.device)
    bundle = Path(args.bundle).resolve()
    sys.path.insert(0, str(bundle))  # bundles import their sibling files
    api = loading.reference_api(bundle / args.reference)
    module = loading.import_file(bundle / args.candidate, "candidate")
    model_class = loading.attribute(module, "ModelNew", args.candidate)
    model = loading.build_model(model_class, api.get_init_inputs, args.seed, device)
    inputs = make_inputs(api.get_inputs, args.seed, device)
    with torch.no_grad():
        model(*inputs)  # warm-up, outside the ranges: lazy initialization is not the candidate's cost
        synchronize(device)
        for call in range(args.calls):
            push(f"{CALL_RANGE_PREFIX}{call}")
            push(CANDIDATE_RANGE)
            model(*inputs)
            synchronize(device)
            pop()
            pop()
    print(f"[profiler_agent] ncu_target: {args.calls} calls after a warm-up", file=sys.stderr)


if __name__ == "__main__":
    main()
