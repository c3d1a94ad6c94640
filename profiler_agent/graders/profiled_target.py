"""The process Nsight Compute launches (`python -m profiler_agent.graders.profiled_target`, see
profiler_agent.judge.ncu_output and profiler_agent.judge.timing_confirmation): imports the reference (for get_inputs /
get_init_inputs) and the candidate, calls the candidate once as a warm-up outside any NVTX range, then
`--calls` times (or fewer: the settings' `calls`, sent with the job), each call inside the ranges `profiler_agent call <i>` / `candidate` that ncu's filter and
parser look for; with `--reference-calls N`, N reference calls after them, each on the inputs of the
candidate's call of that index, inside `profiler_agent call <i>` / `profiler_agent reference` /
`candidate`: the census names their kernels, and the confirmation takes the reference's kernel record
from them (profiler_agent.judge.timing_confirmation), in the same profile, under the same clocks, as the candidate's.

With `--warm-up` (the timing confirmation's profile), one kernel runs first in WARM_UP_RANGE, before
any submission code loads (while the process waits for its job, when its CUDA context is made
ahead): ncu's own setup at the first kernel it profiles is paid there, and its reading drops that launch.

With the settings' `gate`, it loads and warms up, then waits for the gate before its profiled calls
(wait_for_gate): its loading overlaps the verifier's run, its calls do not.

With `--gpu-turn` (started during the judging before its own, judge.warm_pool), it makes its CUDA
context and that warm-up only when the agent's turn line comes before its settings
(child_channel.read_turn_or_settings), else with its job; it says on stderr when it waits for its turn
and when that setup is done (child_channel.WAITING_FOR_TURN, TURN_DONE).

Each call gets fresh inputs, drawn from the secret seed (read on stdin before any submission code
loads) right before it: call i draws the verifier's trial i (seed + 1 + i), the warm-up another one.
With `--outputs` each call's output goes to that exchange folder, where the trusted verifier checks
it: a candidate that computes less under the profiler gives wrong answers there. On CUDA, L2 is
flushed (by reading) before each call, as the timing does, so the profiled calls start as cold.

It runs submission code, in the sandbox, after the verdict: nothing it does is trusted, and nothing
it reports is read but ncu's own output and the outputs the verifier checks. On `--device cpu` (tests:
no GPU, no ncu) the same calls run without NVTX ranges, which CPU builds of torch do not have.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from profiler_agent.sandbox.child_channel import (GPU_TURN, TURN_DONE, WAITING_FOR_TURN, add_cuda_ahead_argument, file_name,
                                                  import_for_backward, make_context, read_settings, read_turn_or_settings,
                                                  take_job)
from profiler_agent.measure.nvtx_ranges import CALL_RANGE_PREFIX, CANDIDATE_RANGE, REFERENCE_RANGE, TIMELINE_PREFIX, WARM_UP_RANGE


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent.graders.profiled_target")
    parser.add_argument("--bundle", required=True, help="the folder the bundle is copied into (also the cwd)")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--calls", type=int, required=True,
                        help="profiled calls after the warm-up, at most (the job's settings may ask fewer)")
    parser.add_argument("--outputs", help="exchange folder for each profiled call's output (trial i)")
    parser.add_argument("--reference-calls", type=int, default=0,
                        help="then this many reference calls (REFERENCE_RANGE): the census, the reference's record")
    parser.add_argument("--warm-up", action="store_true",
                        help="first, one kernel in WARM_UP_RANGE (ncu's setup paid before the job; CUDA only)")
    add_cuda_ahead_argument(parser)
    parser.add_argument(GPU_TURN, action="store_true",
                        help="make the CUDA context (and warm up ncu) when the agent gives this process its turn "
                             "at the GPU before its settings (judge.warm_pool), else at its job")
    return parser.parse_args(argv)


def warm_up_profiler() -> None:
    """One kernel inside WARM_UP_RANGE / CANDIDATE_RANGE: ncu sets itself up at the first kernel it
    profiles (most of a second), here rather than in the judging. Run before any submission code
    loads, so it is the first launch ncu records (ncu_output.parse_launches drops it)."""
    import torch

    torch.cuda.set_device(0)
    torch.cuda.nvtx.range_push(WARM_UP_RANGE)
    torch.cuda.nvtx.range_push(CANDIDATE_RANGE)
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()


GATE_POLL_S = 0.002
WAITING_FOR_GATE = "[profiler_agent] profiled process: loaded and warm; its profiled calls wait for the gate"


def wait_for_gate(settings: dict) -> None:
    """With the settings' `gate` (a path), wait until it exists: the agent gives this process its
    job while the verifier still runs (judge.timing_confirmation), so it loads beside it, and makes
    the gate once the verifier is done and the GPU is this process's alone. Only the profiled calls
    wait: a process that does not wait runs them beside the verifier, which only makes its own
    kernels' record longer."""
    gate = settings.get("gate")
    if gate is None:
        return
    if not isinstance(gate, str):
        raise ValueError(f"settings['gate'] is not a path: {gate!r}")
    print(f"{WAITING_FOR_GATE} {gate}", file=sys.stderr, flush=True)
    while not os.path.exists(gate):
        time.sleep(GATE_POLL_S)


def job_calls(settings: dict, most: int) -> int:
    """The calls the job asks for (`calls`, a positive whole number), never more than `most`, the
    number this process was started for (ncu's launch cap was set for it); `most` when it asks none."""
    asked = settings.get("calls")
    if asked is None:
        return most
    if not isinstance(asked, int) or isinstance(asked, bool) or asked < 1:
        raise ValueError(f"settings['calls'] is not a positive whole number: {asked!r}")
    return min(asked, most)


def start_up_line(settings: dict, phases: list[tuple[str, float]]) -> str:
    """How this process's start-up met its job, for the confirmation's cost line: the agent sends
    when it started the process and when it gave the job (`started_at`, `given_at`: time.monotonic(),
    one clock for the host's processes); `phases`: (what, when it ended) in order, the last one
    ending when the process was ready. A job that waited for its process waited that long in the judging."""
    started, given = settings.get("started_at"), settings.get("given_at")
    if not all(isinstance(value, float) for value in (started, given)) or not phases:
        return ""
    steps, previous = [], started
    for name, ended in phases:
        steps.append(f"{name} {ended - previous:.2f}")
        previous = ended
    ready = phases[-1][1]
    met = (f"its job waited {ready - given:.2f} s for it" if ready > given
           else f"ready {given - ready:.2f} s before its job")
    return f"; started {given - started:.2f} s before its job, ready after {ready - started:.2f} s ({', '.join(steps)}): {met}"


def main(argv=None) -> None:
    args = parse_args(argv)
    phases = [("launch", time.monotonic())]  # ncu's and Python's own start, from the agent's
    import torch  # first: this process is started ahead of its turn (profiler_agent.judge.started_ahead)

    phases.append(("torch", time.monotonic()))
    import_for_backward(args.device)
    phases.append(("backward imports", time.monotonic()))
    warm_up = args.warm_up and args.device == "cuda"
    settings, ahead = None, args.cuda_ahead
    if args.gpu_turn:  # started during another judging: its CUDA setup waits for the GPU to be free
        print(WAITING_FOR_TURN, file=sys.stderr, flush=True)
        settings = read_turn_or_settings()
        ahead = settings is None
        if ahead:
            phases.append(("waiting for its turn", time.monotonic()))
    if ahead:  # the GPU is idle before the job (judge.warm_pool)
        make_context(args.device)
        phases.append(("CUDA context", time.monotonic()))
        if warm_up:
            warm_up_profiler()
            phases.append(("profiler warm-up", time.monotonic()))
        if args.gpu_turn:
            print(TURN_DONE, file=sys.stderr, flush=True)
    if settings is None:
        settings = read_settings()  # before any submission code loads; stdin is closed after
    if warm_up and not ahead:
        warm_up_profiler()
    clock = time.perf_counter()
    seed = settings.get("seed")
    if not isinstance(seed, int):
        sys.exit("[profiler_agent] ncu_target: no seed on stdin")
    take_job(settings)
    calls = job_calls(settings, args.calls)
    reference_calls = min(args.reference_calls, calls)
    reference_name, candidate_name = file_name(settings, "reference"), file_name(settings, "candidate")

    from profiler_agent.executors import build_tools
    from profiler_agent.trials import output_exchange
    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.bundles import module_loading
    from profiler_agent.util.tensors import synchronize
    from profiler_agent.measure.timing import L2_FLUSH_BYTES

    if args.device == "cuda":
        torch.cuda.set_device(0)
        push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
        flush_buffer = torch.zeros(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        flush = flush_buffer.max  # reads every line, leaves clean ones (see timing.CudaTimer)
    else:
        push, pop, flush = (lambda _name: None), (lambda: None), (lambda: None)
    device = torch.device(args.device)
    bundle = Path(args.bundle).resolve()
    sys.path.insert(0, str(bundle))  # bundles import their sibling files
    api = module_loading.reference_api(bundle / reference_name, settings.get("case"))  # the case confirmed
    build_tools.install()  # as the judged process built it: the same build is found
    module = module_loading.import_file(bundle / candidate_name, "candidate")
    model_class = module_loading.attribute(module, "ModelNew", candidate_name)
    model = module_loading.build_model(model_class, api.get_init_inputs, seed, device, api.backward)
    loaded_s = time.perf_counter() - clock
    with torch.no_grad():
        # warm-up, outside the ranges: lazy initialization is not the candidate's cost
        model(*make_inputs(api.get_inputs, seed + 1 + calls, device))
        synchronize(device)
        warm_s = time.perf_counter() - clock
        wait_for_gate(settings)
        gate_s = time.perf_counter() - clock
        for call in range(calls):
            inputs = make_inputs(api.get_inputs, seed + 1 + call, device)  # drawn only now
            flush()
            synchronize(device)
            push(f"{CALL_RANGE_PREFIX}{call}")
            push(CANDIDATE_RANGE)
            output = model(*inputs)
            synchronize(device)
            pop()
            pop()
            if args.outputs:
                output_exchange.save_output(Path(args.outputs), call, output)
            del output, inputs
        profiled_s = time.perf_counter() - clock
        if reference_calls:  # last: a candidate that reaches ncu's launch cap leaves them out
            reference = module_loading.build_model(api.Model, api.get_init_inputs, seed, device, api.backward)
            reference(*make_inputs(api.get_inputs, seed + 1 + calls, device))  # lazy init, outside the ranges
            synchronize(device)
            for call in range(reference_calls):
                inputs = make_inputs(api.get_inputs, seed + 1 + call, device)
                flush()
                synchronize(device)
                push(f"{CALL_RANGE_PREFIX}{call}")
                push(REFERENCE_RANGE)
                push(CANDIDATE_RANGE)
                reference(*inputs)
                synchronize(device)
                pop()
                pop()
                pop()
                del inputs
    # what the confirmation's cost line shows (judge.timing_confirmation): the rest of its time is ncu's own
    print(f"{TIMELINE_PREFIX}{calls} calls after a warm-up; loaded at {loaded_s:.2f} s, warm at {warm_s:.2f} s, "
          + (f"gate open at {gate_s:.2f} s, " if settings.get("gate") else "") + f"calls done at {profiled_s:.2f} s, all done at {time.perf_counter() - clock:.2f} s"
          + start_up_line(settings, phases), file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # ncu has every kernel's record as it ends; Python's and CUDA's teardown would add half a second
    # to every confirmation (bench/judge/ncu_exit_cost.py: 0.78 s from the last kernel to ncu's exit, 0.22 s)
    os._exit(0)


if __name__ == "__main__":
    main()
