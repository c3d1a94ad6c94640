"""The `bench` and `bench-upload` commands (their options: profiler_agent.__main__.build_parser)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from profiler_agent import HARNESS_VERSION

USAGE_ERROR = 2  # as profiler_agent.__main__'s: argparse's exit status for a bad command line


def run_bench(args: argparse.Namespace, parser: argparse.ArgumentParser, options) -> int:
    """`bench DATASET`: every sample judged with `options` (the judge's), resumable, scored, sent."""
    from profiler_agent.benchmark import run, score
    from profiler_agent.benchmark.dataset import DatasetError, open_dataset
    from profiler_agent.benchmark.state import State, default_state_path

    if args.upload and not args.token:
        parser.error("--upload needs --token (or PROFILER_AGENT_USER_TOKEN): your personal API token")
    if args.limit is not None and args.limit < 0:
        parser.error("--limit must be 0 or more")
    with tempfile.TemporaryDirectory(prefix="profiler-agent-dataset-") as tmp:
        try:
            dataset = open_dataset(args.dataset, Path(tmp))
        except DatasetError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return USAGE_ERROR
        baseline = args.baseline or score.default_baseline(dataset.samples)
        if args.baseline and args.baseline.lower() not in score.known_baselines(dataset.samples):
            print(f"error: no sample of {dataset.name} has a time on {args.baseline!r}", file=sys.stderr)
            return USAGE_ERROR
        header = {"dataset": dataset.checksum, "device": options.device, "harness_version": HARNESS_VERSION}
        state_path = args.state or default_state_path(dataset.checksum, options.device, args.json)
        state = State(state_path, header, restart=args.restart)
        if state.rows:
            print(f"resuming: {len(state.rows)} samples from {state_path} (--restart judges them again)",
                  file=sys.stderr)
        try:
            result = run.bench(dataset, options, state, baseline=baseline, limit=args.limit)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {len(state.rows)} samples kept in {state_path}; run again to go on",
                  file=sys.stderr)
            return 130
    print(run.format_table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    if args.upload:
        if not result["complete"]:
            print("error: not uploaded: the run is incomplete", file=sys.stderr)
            return 1
        return _send(result, args.upload, args.token)
    return 0


def _send(result: dict, site: str, token: str) -> int:
    """Upload a complete bench result; 0 once the site keeps it, 1 (the reason on stderr) otherwise."""
    from profiler_agent.benchmark import run

    try:
        status, answer = run.upload(result, site, token)
    except OSError as exc:  # URLError included: no route, refused, DNS, timeout
        print(f"error: cannot reach {site}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    if status not in (200, 201):
        print(f"error: upload refused ({status}): {answer.get('detail') or answer}", file=sys.stderr)
        return 1
    print(f"uploaded: benchmark run {answer.get('id')} ({site.rstrip('/')}/api/v1/benchmark-runs/{answer.get('id')})")
    return 0


def run_bench_upload(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """`bench-upload FILE`: the result of a `bench --json FILE` run on a machine that could not reach the site."""
    from profiler_agent.benchmark import run

    if not args.site or not args.token:
        parser.error("bench-upload needs --site and --token (or PROFILER_AGENT_SITE and PROFILER_AGENT_USER_TOKEN)")
    try:
        result = run.read_result(args.result)
    except run.IncompleteRun as exc:
        print(f"error: not uploaded: {exc}", file=sys.stderr)
        return 1
    except run.ResultError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    return _send(result, args.site, args.token)
