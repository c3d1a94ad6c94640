"""The acceptance bench of "Judging integrity II": adversarial bundles (one per class) and the honest
launch-bound ones judged with the real CLI, one markdown row each against the outcome it must get.

    python bench/judge/integrity.py --out DIR                     # CUDA, everything (~6-8 min on an H100)
    python bench/judge/integrity.py --out DIR --only adv-side-stream --only adv-legacy-stream
    python bench/judge/integrity.py --device cpu --out DIR        # the bundles that make sense on CPU

The bundles are bench/fixtures/bundles/adv-* and lb-*; what each must get is in bench/judge/integrity_cases.py
(status, flags, and for some a relation between figures of the result: never a hard-coded time).
Steps: (1) every bundle whose import builds an extension is built first, all at once (a judging cut
short right after its build by `--run-timeout`; the failing build's first judging runs there too),
so the judgings after it are warm; (2) each bundle judged, a row printed as it ends (OK/UNEXPECTED);
(3) the table again, and the median wall time of the warm honest judgings; (4) on CUDA with `ncu`,
the true speedup of each honest bundle (ncu kernel sums, bench/judge/launch_bound.py's truth, loading the
judge's own builds; `--truth-cache-state call` by default: each call's caches as in real use) against
the reported one. Writes DIR/<bundle>.json per judging, DIR/integrity.json,
DIR/logs/*.log (the CLI's output). `--deadline` keeps it inside one device call: a step that would
start past it is skipped and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import launch_bound  # noqa: E402
from integrity_cases import Case, judge_outcome, select  # noqa: E402

REPO = launch_bound.REPO
DEFAULT_CACHE = REPO / "bench" / ".cache" / "integrity-builds"  # git-ignored
STARTED = time.monotonic()
JUDGING_ALLOWANCE_S = 40  # a judging is not started with less than this left before the deadline
NCU_ALLOWANCE_S = 25


def elapsed() -> float:
    return time.monotonic() - STARTED


def judge(bundle: Path, cache: Path, out_json: Path, log: Path, args: list[str], timeout_s: float) -> tuple[dict, float]:
    """`python -m profiler_agent judge` on the bundle; its result (or why there is none) and the wall time."""
    out_json.unlink(missing_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(log, "w") as output:
        try:
            subprocess.run([sys.executable, "-m", "profiler_agent", "judge", str(bundle), "--cache-dir", str(cache),
                            "--json", str(out_json), *args], cwd=REPO, stdout=output, stderr=subprocess.STDOUT,
                           timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return {"status": "no result", "reason": f"bench: judge ran past {timeout_s:.0f} s", "flags": []}, timeout_s
    seconds = time.perf_counter() - started
    if not out_json.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return {"status": "no result", "reason": f"bench: no result JSON; {tail[0][:200]}", "flags": []}, seconds
    return json.loads(out_json.read_text()), seconds


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out: Path = args.out
        self.cache: Path = args.cache_dir.resolve()
        self.common = ["--device", args.device, "--timing-budget", str(args.timing_budget),
                       "--run-timeout", str(args.run_timeout)]
        self.fresh_caches: dict[str, Path] = {}
        self.report: dict = {"device": args.device, "argv": sys.argv[1:], "builds": [], "rows": [], "truth": []}

    def cache_of(self, case: Case) -> Path:
        if not case.fresh_cache:
            return self.cache
        if case.bundle not in self.fresh_caches:
            self.fresh_caches[case.bundle] = Path(tempfile.mkdtemp(prefix=f"integrity-{case.bundle}-"))
        return self.fresh_caches[case.bundle]

    def judging(self, case: Case, index: int, extra: list[str] | None = None) -> tuple[dict, float]:
        name = case.bundle if case.judgings == 1 else f"{case.bundle}-{index + 1}"
        remaining = self.args.deadline - elapsed()
        return judge(case.path, self.cache_of(case), self.out / f"{name}.json",
                     self.out / "logs" / f"{name}.log", [*self.common, *case.judge_args, *(extra or [])],
                     timeout_s=max(remaining, 30.0))

    def save(self) -> None:
        (self.out / "integrity.json").write_text(json.dumps(self.report, indent=1))

    def build_all(self, cases: list[Case]) -> dict[str, tuple[dict, float]]:
        """Every build at once: a judging cut short 1 s after its build (the build stays in the cache),
        and the first judging of a failing build. Returns those first judgings by bundle."""
        builds = [case for case in cases if case.builds]
        firsts = [case for case in cases if case.first_is_build]
        if not builds and not firsts:
            return {}
        print(f"building {len(builds) + len(firsts)} bundle(s) at once: "
              f"{', '.join(c.bundle for c in builds + firsts)}", flush=True)

        def build(case: Case):
            result, seconds = judge(case.path, self.cache_of(case), self.out / f"build-{case.bundle}.json",
                                    self.out / "logs" / f"build-{case.bundle}.log",
                                    ["--device", self.args.device, "--run-timeout", "1"],
                                    timeout_s=max(self.args.deadline - elapsed(), 30.0))
            return case, result, seconds

        with ThreadPoolExecutor(max_workers=max(1, len(builds))) as pool:
            futures = [pool.submit(build, case) for case in builds]
            first_results = {case.bundle: self.judging(case, 0) for case in firsts}  # beside the builds
            for future in futures:
                case, result, seconds = future.result()
                row = {"bundle": case.bundle, "status": result.get("status"),
                       "compile_s": (result.get("durations_s") or {}).get("compile"), "wall_s": round(seconds, 1),
                       "built": result.get("status") not in ("compile_error", "no result")}
                self.report["builds"].append(row)
                print(f"  build {case.bundle}: {row['status']} (cut short after the build is expected), "
                      f"compile {fmt(row['compile_s'], '.1f')} s, wall {seconds:.1f} s", flush=True)
        self.save()
        return first_results

    def run(self, cases: list[Case], skipped: list[str]) -> None:
        for note in skipped:
            print(f"skipped: {note}")
        firsts = self.build_all(cases)
        built = {row["bundle"] for row in self.report["builds"] if row["built"]}
        print("\n" + HEADER, flush=True)
        for case in cases:
            judgings, walls = [], []
            for index in range(case.judgings):
                if index == 0 and case.bundle in firsts:
                    result, seconds = firsts[case.bundle]
                elif elapsed() + JUDGING_ALLOWANCE_S > self.args.deadline:
                    result, seconds = {"status": "skipped", "reason": "bench deadline", "flags": []}, 0.0
                else:
                    result, seconds = self.judging(case, index)
                judgings.append(result)
                walls.append(seconds)
            outcome = case.expected if self.args.device == "cuda" else case.cpu
            ok, misses = judge_outcome(outcome, judgings)
            if any(r.get("status") == "skipped" for r in judgings):
                ok, misses = None, ["skipped: bench deadline"]
            warm = case.honest and (not case.builds or case.bundle in built)
            for index, (result, seconds) in enumerate(zip(judgings, walls)):
                row = summarize(case, outcome.words, result, seconds, index, warm)
                last = index == len(judgings) - 1
                row["verdict"] = ("SKIPPED" if ok is None else "OK" if ok else "UNEXPECTED") if last else "(1st)"
                row["misses"] = misses if last else []
                self.report["rows"].append(row)
                print(markdown_row(row), flush=True)
            self.save()
        self.print_table()
        if self.args.device == "cuda" and not self.args.no_truth:
            self.truth([case for case in cases if case.honest])
        self.save()

    def print_table(self) -> None:
        rows = self.report["rows"]
        print("\n" + HEADER)
        for row in rows:
            print(markdown_row(row))
        for row in rows:
            if row["misses"]:
                print(f"{row['bundle']}: {row['verdict']}: {'; '.join(row['misses'])}")
        warm = [row["wall_s"] for row in rows if row["warm_honest"] and row["status"] != "skipped"]
        median = statistics.median(warm) if warm else None
        self.report["warm_honest_median_wall_s"] = median
        # an adversarial one that passed is never ranked above what its kernels' record supports
        passed = [row for row in rows if not row["honest"] and row["status"] == "passed"]
        above = [row["bundle"] for row in passed
                 if not (row["speedup"] and row["confirmation"]["kernel_speedup"]
                         and row["speedup"] <= row["confirmation"]["kernel_speedup"] * (1 + 1e-9))]
        self.report["adversarial_passed_above_kernels"] = above
        print(f"adversarial judgings that passed: {len(passed)}; timing.speedup above its kernels' ratio "
              f"(or no ratio): {', '.join(above) or 'none'}")
        counts = {v: sum(row["verdict"] == v for row in rows) for v in ("OK", "UNEXPECTED", "SKIPPED")}
        print(f"\nmedian judging wall time of the warm honest judgings: {fmt(median, '.1f')} s "
              f"({len(warm)} judgings); verdicts: {counts}", flush=True)

    def truth(self, honest: list[Case]) -> None:
        """True speedups from the GPU's own kernel record (ncu, both models), against the reported ones."""
        import shutil

        if shutil.which("ncu") is None:
            print("\ntruth: skipped, no ncu on PATH")
            return
        from profiler_agent.executors import build_cache
        from profiler_agent.sandbox import privileges

        builds = build_cache.reachable_cache_dir(self.cache, privileges.sandbox_user())
        state = self.args.truth_cache_state
        print(f"\n| bundle | reported speedup | true speedup (ncu kernel sums, caches: {state}) | reported/true "
              "| ref kernel ms | cand kernel ms | cand kernels |\n" + "| --- " * 7 + "|", flush=True)
        for case in honest:
            if elapsed() + NCU_ALLOWANCE_S > self.args.deadline:
                print(f"| {case.bundle} | skipped: bench deadline |")
                continue
            bundle = case.path
            env = {}
            if case.builds:
                env = {"TORCH_EXTENSIONS_DIR": str(build_cache.extensions_dir(builds, bundle / "cudacode.py", "cuda")),
                       launch_bound.PREBUILT_ENV: "1"}
            truth = launch_bound.kernel_sums(bundle, self.out, env, state)
            reference, candidate, true, kernels = (truth.reference_ms, truth.candidate_ms, truth.speedup,
                                                   truth.candidate_kernels)
            reported = next((r["speedup"] for r in self.report["rows"] if r["bundle"] == case.bundle), None)
            ratio = reported / true if reported and true else None
            self.report["truth"].append({"bundle": case.bundle, "cache_state": state,
                                         "reported_speedup": reported, "true_speedup": true,
                                         "reported_over_true": ratio, "reference_kernel_ms": reference,
                                         "candidate_kernel_ms": candidate, "candidate_kernels": kernels,
                                         "per_call_ratio_min_median_max": truth.spread})
            print(f"| {case.bundle} | {fmt(reported, '.3f')} | {fmt(true, '.3f')} | {fmt(ratio, '.3f')} "
                  f"| {fmt(reference)} | {fmt(candidate)} | {', '.join(kernels)[:160]} |", flush=True)
            self.save()


HEADER = ("| bundle | class | expected | status | verdict | flags | reason | speedup | median ms ref / cand "
          "| batched ms ref / cand | confirmation kernel ms / ratio / confirmed | durations_s "
          "| timing phase (s) | wall s |\n" + "| --- " * 14 + "|")


def fmt(value, spec: str = ".4f") -> str:
    return "n/a" if value is None else format(value, spec) if isinstance(value, (int, float)) else str(value)


def summarize(case: Case, expected: str, result: dict, seconds: float, index: int, warm: bool) -> dict:
    timing = result.get("timing") or {}
    side = lambda name: timing.get(name) or {}  # noqa: E731
    confirmation = timing.get("confirmation") or {}
    return {
        "bundle": case.bundle if case.judgings == 1 else f"{case.bundle} #{index + 1}",
        "class": case.item, "expected": expected, "status": result.get("status"), "flags": result.get("flags") or [],
        "reason": result.get("reason"), "speedup": timing.get("speedup"),
        "median_ms": [side("reference").get("median_ms"), side("candidate").get("median_ms")],
        "batched_ms": [side("reference").get("batched_ms"), side("candidate").get("batched_ms")],
        "confirmation": {key: confirmation.get(key) for key in ("kernel_ms", "ratio", "kernel_speedup", "confirmed",
                                                               "reason")},
        "durations_s": result.get("durations_s"), "stages": launch_bound.stage_line(result),
        "wall_s": round(seconds, 1), "warm_honest": warm and index == case.judgings - 1, "honest": case.honest,
    }


def _cell(text) -> str:
    return str(text).replace("|", "/").replace("\n", " ")[:160] if text else "-"


def markdown_row(row: dict) -> str:
    c = row["confirmation"]
    durations = row["durations_s"] or {}
    spent = " ".join(f"{key[:4]} {fmt(durations.get(key), '.1f')}" for key in ("compile", "correctness", "timing", "total"))
    pair = lambda values: " / ".join(fmt(v) for v in values)  # noqa: E731
    return (f"| {row['bundle']} | {row['class']} | {row['expected']} | {row['status']} | {row['verdict']} "
            f"| {', '.join(row['flags']) or '-'} | {_cell(row['reason'])} | {fmt(row['speedup'], '.3f')} "
            f"| {pair(row['median_ms'])} | {pair(row['batched_ms'])} "
            f"| {fmt(c['kernel_ms'])} / {fmt(c['ratio'], '.3f')} / {c['confirmed']} | {spent} "
            f"| {_cell(row['stages'])} | {row['wall_s']} |")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "bench-out/integrity"))
    parser.add_argument("--only", action="append", metavar="BUNDLE", help="a bundle of the bench, by its folder's name (repeatable)")
    parser.add_argument("--set", choices=("all", "honest", "adversarial"), default="all",
                        help="the honest bundles alone (with their truth), the others alone, or all")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE,
                        help="the judgings' build cache (the failing build gets a fresh one of its own)")
    parser.add_argument("--timing-budget", type=float, default=1.0, help="the judge's --timing-budget (s)")
    parser.add_argument("--run-timeout", type=float, default=180.0, help="the judge's --run-timeout (s)")
    parser.add_argument("--deadline", type=float, default=510.0,
                        help="seconds from the start past which no judging or ncu run starts")
    parser.add_argument("--no-truth", action="store_true", help="skip the ncu truth of the honest bundles")
    # "call" (default): each call's caches as in real use, the target flushing L2 before each call as
    # the judge's timer does; "kernel": ncu's flush before every kernel (cold), what the first integrity runs printed
    parser.add_argument("--truth-cache-state", choices=("call", "kernel"), default="call",
                        help="the truth's cache state (bench/judge/launch_bound.py truth --cache-state)")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cases, skipped = select(args.only, args.device)
    if args.set != "all":
        cases = [case for case in cases if case.honest == (args.set == "honest")]
    Bench(args).run(cases, skipped)


if __name__ == "__main__":
    main()
