"""Command line: `python -m profiler_agent judge BUNDLE`, `... bench DATASET` (every sample of a dataset
judged here, this GPU scored), `... bench-upload FILE` (a bench result sent from a machine that can reach
the site), `... work ...` (one worker) and `... fleet ...` (one worker per GPU of the host)."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

from profiler_agent.worker.agent_config import keep_warm_from_env, ncu_from_env, ncu_timeout_from_env
from profiler_agent.util.sizes import parse_size

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
USAGE_ERROR = 2


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:  # NaN included
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    return value


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compile-timeout", type=_positive, metavar="SECONDS",
                        help="wall-clock limit on importing the candidate, where load_inline builds (default 600); "
                        "past it the status is compile_error")
    parser.add_argument("--run-timeout", "--timeout", type=_positive, metavar="SECONDS", dest="run_timeout",
                        help="wall-clock limit from the end of the build to the end of the judged process "
                        "(default 600; --timeout is its older name); a process lives at most both limits together")
    parser.add_argument("--memory-limit", type=_size, metavar="SIZE",
                        help="memory after the build (e.g. 4G): cgroup v2 memory.max where the agent can make a "
                        "cgroup, on any device; elsewhere an address-space limit, CPU only")
    parser.add_argument("--compile-memory-limit", type=_size, metavar="SIZE",
                        help="memory during the build, cgroup only (default: the larger of --memory-limit and 4G)")


def _add_judging_options(parser: argparse.ArgumentParser) -> None:
    """What `judge` and `bench` both take: where builds go, the seed, tolerances, timing."""
    parser.add_argument("--cache-dir", type=Path, metavar="DIR", help="where extension builds are kept")
    parser.add_argument("--seed", type=int, help="input seed (default: a fresh secret one)")
    parser.add_argument("--atol", type=float, help="override the per-dtype absolute tolerance")
    parser.add_argument("--rtol", type=float, help="override the per-dtype relative tolerance")
    parser.add_argument("--timing-budget", type=_positive, metavar="SECONDS",
                        help="time spent timing each model pair at most (default: $PROFILER_AGENT_TIMING_BUDGET, else 3)")
    parser.add_argument("--target-rse", type=_positive, metavar="FRACTION",
                        help="stop timing once the medians' relative standard error is below this (default 0.005)")
    parser.add_argument("--suspicious-speedup", type=_positive, metavar="RATIO",
                        help="flag speedups above this (default 20)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m profiler_agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    judge = commands.add_parser("judge", help="judge a bundle here and print the result")
    judge.add_argument("bundle", type=Path, help="a bundle folder or a .zip of one")
    judge.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available, else cpu")
    judge.add_argument("--json", type=Path, metavar="FILE", help="also write the result JSON to FILE")
    judge.add_argument("--mode", choices=("ranked", "benchmark", "test", "profile"), default="ranked",
                       help="test: the correctness trials and the verifier's verdict only, no timing, confirmation or "
                       "self-test (a test submission's judging); profile: the same trials, then both models' kernels "
                       "under Nsight Compute, a report per kernel (a profile run's judging); ranked and benchmark: the "
                       "full judging (default)")
    judge.add_argument("--profile-dir", type=Path, metavar="DIR",
                       help="--mode profile: keep the report's .ncu-rep and ncu's table (ncu-details.csv) in DIR")
    judge.add_argument("--profile-kernels", type=_whole, metavar="N",
                       help="--mode profile: profile at most N kernel launches of each model (default 20)")
    judge.add_argument("--profile-timeout", type=_positive, metavar="SECONDS",
                       help="--mode profile: wall-clock limit of the profiled run under ncu (default 600)")
    _add_limit_options(judge)
    _add_judging_options(judge)
    judge.add_argument("--ncu", action=argparse.BooleanOptionalAction, default=ncu_from_env(),
                       help="profile a passed candidate with Nsight Compute when `ncu` is on PATH (CUDA only; "
                       "default: PROFILER_AGENT_NCU=1)")
    judge.add_argument("--ncu-timeout", type=_positive, metavar="SECONDS",
                       help="wall-clock limit of the ncu run (default: PROFILER_AGENT_NCU_TIMEOUT, else 120)")

    bench = commands.add_parser("bench", help="judge every sample of a dataset here and score this GPU "
                                "(docs/dataset.md, Benchmarking a GPU)")
    bench.add_argument("dataset", type=Path, help="an exported dataset: its folder or its .tar.gz")
    bench.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available, else cpu")
    bench.add_argument("--json", type=Path, metavar="FILE",
                       help="write the whole result to FILE (the state file is then FILE.state.jsonl)")
    bench.add_argument("--baseline", metavar="GPU",
                       help="the GPU type or name of the manifest's times to compare with (default: its most "
                       "common GPU type)")
    bench.add_argument("--state", type=Path, metavar="FILE",
                       help="the resume file (default: next to --json, else ~/.cache/profiler_agent/bench/)")
    bench.add_argument("--restart", action="store_true", help="judge every sample again, ignoring the state file")
    bench.add_argument("--limit", type=int, metavar="N", help="judge at most N samples in this run, then stop")
    bench.add_argument("--upload", metavar="SITE", help="send the result to SITE (a benchmark run of this GPU)")
    bench.add_argument("--token", default=os.environ.get("PROFILER_AGENT_USER_TOKEN"),
                       help="your personal API token for --upload (default: PROFILER_AGENT_USER_TOKEN)")
    _add_limit_options(bench)
    _add_judging_options(bench)
    bench.add_argument("--keep-warm", action=argparse.BooleanOptionalAction, default=False,
                       help="start the next sample's processes as soon as one ends (skips their imports)")

    send = commands.add_parser("bench-upload", help="send a result written by `bench --json FILE` to the site "
                               "(from any machine that can reach it; needs no torch)")
    send.add_argument("result", type=Path, metavar="FILE", help="the JSON that `bench --json FILE` wrote")
    send.add_argument("--site", default=os.environ.get("PROFILER_AGENT_SITE"),
                      help="the site's base URL (default: PROFILER_AGENT_SITE)")
    send.add_argument("--token", default=os.environ.get("PROFILER_AGENT_USER_TOKEN"),
                      help="your personal API token (default: PROFILER_AGENT_USER_TOKEN)")

    pch = commands.add_parser("prepare-pch", help="precompile torch/extension.h for the builds of judged bundles")
    pch.add_argument("--cache-dir", type=Path, metavar="DIR", help="the build cache the judge uses")
    pch.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                     help="the flags of a CUDA build (its main.cpp gets CUDA's include folder) or a CPU one")
    pch.add_argument("--cflags", action="append", metavar="FLAGS",
                     help='extra_cflags of the builds to serve, e.g. "-O3" (repeatable; default: none, -O3, -O2)')

    work = commands.add_parser("work", help="serve judge jobs from RQ queues")
    _add_worker_options(work)
    work.add_argument("--name", help="worker name (default: host name, with -gpu<index> when pinned)")
    work.add_argument("--device", choices=("cpu", "cuda"))
    work.add_argument("--gpu", metavar="INDEX|UUID",
                      help="pin this worker to one GPU (nvidia-smi's index, or its UUID): it and the judged "
                      "processes see that GPU alone")

    listing = commands.add_parser("gpus", help="list this host's GPUs as NVML sees them (no CUDA context)")
    listing.add_argument("--indexes", action="store_true", help="print the indexes alone, one a line (for unit files)")

    fleet = commands.add_parser("fleet", help="run one `work` process per GPU of this host (or N CPU workers)")
    _add_worker_options(fleet)
    fleet.add_argument("--name", help="agent name, prefix of the workers' names <name>-gpu<index> (default: host name)")
    chosen = fleet.add_mutually_exclusive_group()
    chosen.add_argument("--gpus", metavar="LIST", help="GPU indexes or UUIDs, e.g. 0,1 (default: every GPU NVML lists)")
    chosen.add_argument("--cpu-workers", type=int, metavar="N", help="N CPU workers instead (a host without GPUs)")
    return parser


def _add_worker_options(parser: argparse.ArgumentParser) -> None:
    """What every worker takes, whether started alone (`work`) or by `fleet`."""
    parser.add_argument("--site", default=os.environ.get("PROFILER_AGENT_SITE"), help="the site's base URL")
    parser.add_argument("--token", default=os.environ.get("PROFILER_AGENT_TOKEN"), help="this agent's token")
    parser.add_argument("--queue", action="append", required=True, dest="queues", help="e.g. gpu.h100; repeatable")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", DEFAULT_REDIS_URL), help="Redis URL")
    parser.add_argument("--burst", action="store_true", help="exit once the queues are empty")
    parser.add_argument("--heartbeat-seconds", type=_positive, default=10.0,
                        help="between heartbeats, which name the run being judged (default 10; the site judges a "
                        "run again once no heartbeat named it for RUN_SILENT_AFTER_SECONDS, 30 by default)")
    parser.add_argument("--judging-heartbeat-seconds", type=_positive, default=None, metavar="SECONDS",
                        help="between heartbeats while a run is judged, when shorter than --heartbeat-seconds "
                        "(default 3): how soon the worker of a run an organizer cancelled stops judging it")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR")
    _add_limit_options(parser)
    parser.add_argument("--ncu", action=argparse.BooleanOptionalAction, default=ncu_from_env(),
                        help="profile a passed candidate with Nsight Compute when `ncu` is on PATH (CUDA only; "
                        "default: PROFILER_AGENT_NCU=1)")
    parser.add_argument("--ncu-timeout", type=_positive, metavar="SECONDS",
                        help="wall-clock limit of the ncu run (default: PROFILER_AGENT_NCU_TIMEOUT, else 120)")
    parser.add_argument("--keep-warm", action=argparse.BooleanOptionalAction, default=keep_warm_from_env(),
                        help="start the next judging's processes as soon as one ends, so a job skips their imports "
                        "(seconds each); jobs run in the worker process, not a fork per job (default: "
                        "PROFILER_AGENT_KEEP_WARM=1)")


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _judge_options(args: argparse.Namespace):
    """The JudgeOptions of `judge` and `bench` (one harness, one set of options)."""
    from profiler_agent.judge.options import JudgeOptions

    options = JudgeOptions(
        device=args.device or _default_device(),
        memory_limit_bytes=args.memory_limit,
        compile_memory_limit_bytes=args.compile_memory_limit,
        cache_dir=args.cache_dir,
        seed=args.seed,
        atol=args.atol,
        rtol=args.rtol,
        timing_budget_s=args.timing_budget,
        target_rse=args.target_rse,
        ncu=getattr(args, "ncu", False),
        keep_warm=getattr(args, "keep_warm", False),
        # a profile run checks correctness as a test does, then profiles (judge.profile_report)
        correctness_only=getattr(args, "mode", "ranked") in ("test", "profile"),
        profile=getattr(args, "mode", "ranked") == "profile",
        profile_dir=getattr(args, "profile_dir", None),
    )
    if getattr(args, "profile_kernels", None):
        options.profile_kernels = args.profile_kernels
    if getattr(args, "profile_timeout", None):
        options.profile_timeout_s = args.profile_timeout
    if args.suspicious_speedup:
        options.suspicious_speedup = args.suspicious_speedup
    if args.run_timeout:
        options.timeout_s = args.run_timeout
    if args.compile_timeout:
        options.compile_timeout_s = args.compile_timeout
    ncu_timeout = getattr(args, "ncu_timeout", None) or ncu_timeout_from_env()
    if ncu_timeout:
        options.ncu_timeout_s = ncu_timeout
    return options


def run_judge(args: argparse.Namespace) -> int:
    from profiler_agent.bundles.bundle import BundleError, open_bundle
    from profiler_agent.judge.judging import judge_bundle
    from profiler_agent.judge.result_table import format_table

    options = _judge_options(args)
    with tempfile.TemporaryDirectory(prefix="profiler-agent-bundle-") as tmp:
        try:
            bundle = open_bundle(args.bundle, Path(tmp))
        except BundleError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return USAGE_ERROR
        result = judge_bundle(bundle, options)
    print(format_table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    return 0


def _pin(args: argparse.Namespace, parser: argparse.ArgumentParser):
    """The GPU this worker judges on: --gpu pins it; else the one GPU it sees, if it sees one."""
    from profiler_agent.worker import host_gpus

    if args.gpu is None:
        return host_gpus.pinned() if args.device != "cpu" else None
    try:
        gpu = host_gpus.find(args.gpu, host_gpus.host_gpus())
        host_gpus.pin(gpu)
    except ValueError as exc:
        parser.error(str(exc))
    return gpu


def run_work(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from profiler_agent.executors.build_cache import default_cache_dir
    from profiler_agent.worker.agent_config import AgentConfig, default_name
    from profiler_agent.devices.device_info import default_device_kind
    from profiler_agent.worker.rq_worker import run_worker

    if not args.site or not args.token:
        parser.error("work needs --site and --token (or PROFILER_AGENT_SITE and PROFILER_AGENT_TOKEN)")
    gpu = _pin(args, parser)
    device = args.device or default_device_kind()
    config = AgentConfig(
        site=args.site,
        token=args.token,
        name=args.name or (f"{socket.gethostname()}-gpu{gpu.index}" if args.gpu is not None else default_name()),
        device=device,
        cache_dir=args.cache_dir or default_cache_dir(),
        timeout_s=args.run_timeout,
        compile_timeout_s=args.compile_timeout,
        memory_limit_bytes=args.memory_limit,
        compile_memory_limit_bytes=args.compile_memory_limit,
        ncu=args.ncu,
        keep_warm=args.keep_warm,
        ncu_timeout_s=args.ncu_timeout or ncu_timeout_from_env(),
        gpu=gpu if device != "cpu" else None,
    )
    run_worker(config, args.queues, args.redis, burst=args.burst, heartbeat_s=args.heartbeat_seconds,
               judging_heartbeat_s=args.judging_heartbeat_seconds)
    return 0


def _shared_worker_args(args: argparse.Namespace) -> list[str]:
    """The options of `fleet` every worker gets, secrets left out (they go by the environment)."""
    shared = [item for queue in args.queues for item in ("--queue", queue)]
    shared += ["--heartbeat-seconds", str(args.heartbeat_seconds)]
    if args.judging_heartbeat_seconds is not None:
        shared += ["--judging-heartbeat-seconds", str(args.judging_heartbeat_seconds)]
    if args.burst:
        shared.append("--burst")
    for option, value in (("--cache-dir", args.cache_dir), ("--compile-timeout", args.compile_timeout),
                          ("--run-timeout", args.run_timeout), ("--memory-limit", args.memory_limit),
                          ("--compile-memory-limit", args.compile_memory_limit), ("--ncu-timeout", args.ncu_timeout)):
        if value is not None:
            shared += [option, str(value)]
    shared.append("--ncu" if args.ncu else "--no-ncu")
    shared.append("--keep-warm" if args.keep_warm else "--no-keep-warm")
    return shared


def run_fleet(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import logging

    from profiler_agent.worker import fleet, host_gpus

    if not args.site or not args.token:
        parser.error("fleet needs --site and --token (or PROFILER_AGENT_SITE and PROFILER_AGENT_TOKEN)")
    if args.cpu_workers is not None and args.cpu_workers < 1:
        parser.error("--cpu-workers must be at least 1")
    chosen = []
    if not args.cpu_workers:
        found = host_gpus.host_gpus()
        try:
            chosen = [host_gpus.find(spec, found) for spec in host_gpus.parse_list(args.gpus)] if args.gpus else found
        except ValueError as exc:
            parser.error(str(exc))
        if not chosen:
            parser.error("no GPU found through NVML: name them with --gpus, or run CPU workers with --cpu-workers N")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    secrets = {"PROFILER_AGENT_SITE": args.site, "PROFILER_AGENT_TOKEN": args.token, "REDIS_URL": args.redis}
    slots = fleet.slots_for(args.name or socket.gethostname(), _shared_worker_args(args), secrets, gpus=chosen,
                            cpu_workers=args.cpu_workers or 0)
    return fleet.Fleet(slots, burst=args.burst).run()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from profiler_agent.judge.options import timing_budget_from_env

    try:
        timing_budget_from_env()  # refused at start, not at the first judging
    except RuntimeError as exc:
        parser.error(str(exc))
    from profiler_agent.sandbox.privileges import make_undumpable
    from profiler_agent.sandbox.secret_scrub import scrub_own_secrets

    make_undumpable()  # judged processes of our uid cannot read our environment through /proc
    scrub_own_secrets()  # nor can root ones, or any where the line above does not hold
    if args.command == "judge":
        return run_judge(args)
    if args.command == "bench":
        from profiler_agent.benchmark import cli as bench_cli

        return bench_cli.run_bench(args, parser, _judge_options(args))
    if args.command == "bench-upload":
        from profiler_agent.benchmark import cli as bench_cli

        return bench_cli.run_bench_upload(args, parser)
    if args.command == "prepare-pch":
        return run_prepare_pch(args)
    if args.command == "fleet":
        return run_fleet(args, parser)
    if args.command == "gpus":
        return run_gpus(args)
    return run_work(args, parser)


def run_gpus(args) -> int:
    from profiler_agent.worker import host_gpus

    for gpu in host_gpus.host_gpus():
        print(gpu.index if args.indexes else f"{gpu.index}\t{gpu.uuid}\t{gpu.model}\t{gpu.memory_bytes}")
    return 0


def run_prepare_pch(args) -> int:
    import shlex
    import time

    from profiler_agent.executors import build_cache, pch

    root = build_cache.pch_root(args.cache_dir or build_cache.default_cache_dir())
    flag_sets = [shlex.split(f) for f in args.cflags] if args.cflags else pch.COMMON_FLAG_SETS
    for flags in flag_sets:
        started = time.monotonic()
        folder = pch.prepare(root, flags, with_cuda=args.device == "cuda")
        print(f"{' '.join(flags) or '(no extra flags)'}: {folder} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
