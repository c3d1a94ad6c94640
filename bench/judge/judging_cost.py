"""What a judging costs, as an agent judging job after job pays it: the median wall time of a warm
judging (the build cached, the processes started before the job: harness.slots), the cost per
stage, and what a bare process costs.

    python bench/judge/judging_cost.py                       # every bundle of bench/fixtures/bundles + examples/001-example
    python bench/judge/judging_cost.py --bundle bench/fixtures/bundles/lb-matmul-relu --rounds 3 --no-keep-warm

(1) Every bundle is built first, all at once (`profiler_agent judge --run-timeout 1`: the judging is
cut short right after its build, which stays in the cache). (2) In this one process, as the worker
runs jobs, each bundle is judged `--rounds` times in turn with the same options, `--keep-warm` as
`work --keep-warm` does, `--gap` seconds apart (0: back to back, a full queue); a line per judging: status, wall, whether its processes were waiting, and
durations_s. (3) The median wall time of the judgings whose processes were waiting (with
--no-keep-warm: of all but each bundle's first), the median of each stage, and the bare costs.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
STAGES = ("compile", "correctness", "timing", "verify", "confirm")
COST_NOTE = "[profiler_agent] timing confirmation: cost: "
TIMING_NOTE = "[profiler_agent] timing phase (s): "


def default_bundles() -> list[Path]:
    bundles = sorted(p for p in (REPO / "bench" / "fixtures" / "bundles").iterdir() if p.is_dir() and not p.name.startswith("."))
    return [*bundles, REPO / "examples" / "001-example"]


def prebuild(bundles: list[Path], device: str, cache: Path) -> None:
    """Every build at once: a judging cut short one second after its build."""
    def build(bundle: Path) -> tuple[str, float]:
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "profiler_agent", "judge", str(bundle), "--device", device,
                        "--cache-dir", str(cache), "--run-timeout", "1"], cwd=REPO, capture_output=True, check=False)
        return bundle.name, time.monotonic() - started

    with ThreadPoolExecutor(max_workers=len(bundles)) as pool:
        for name, seconds in pool.map(build, bundles):
            print(f"  built {name}: {seconds:.1f} s", flush=True)


def bare_costs(device: str) -> list[tuple[str, float]]:
    rows = []
    probes = {"python + import torch": "import torch"}
    if device == "cuda":
        probes["python + import torch + CUDA context"] = "import torch; torch.cuda.synchronize()"
    for name, code in probes.items():
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", code], check=False, capture_output=True)
        rows.append((name, time.monotonic() - started))
    ncu = shutil.which("ncu")
    if ncu and device == "cuda":
        started = time.monotonic()
        subprocess.run([ncu, "--nvtx", "--nvtx-include", "nothing/", "--csv", sys.executable, "-c",
                        probes["python + import torch + CUDA context"]], check=False, capture_output=True)
        rows.append(("the same under ncu, nothing profiled", time.monotonic() - started))
    return rows


def cold_judging(bundle_path: Path, options, gap: float) -> None:
    """A copy of the bundle whose candidate file differs by a comment: another build key, so its
    build is compiled (same sources and flags, so the agent's precompiled header fits)."""
    from profiler_agent.bundles.bundle import open_bundle
    from profiler_agent.judge.judging import WARM_NOTE, judge_bundle

    time.sleep(gap)
    with tempfile.TemporaryDirectory(prefix="judging-cost-cold-") as tmp:
        copy = Path(tmp) / bundle_path.name
        shutil.copytree(bundle_path, copy)
        bundle = open_bundle(copy, Path(tmp) / "opened")
        with open(bundle.candidate, "a") as f:
            f.write(f"\n# cold build {time.time_ns()}\n")
        started = time.monotonic()
        result = judge_bundle(bundle, options)
        wall = time.monotonic() - started
    durations = {k: round(v, 2) for k, v in result["durations_s"].items() if isinstance(v, (int, float))}
    print(f"{bundle_path.name} (cold build): {result['status']} wall {wall:.1f} s, processes waiting: "
          f"{'yes' if WARM_NOTE in result['logs']['stderr'] else 'no'}; durations_s {durations}", flush=True)
    # which torch headers each build took (a tier refused, a header not used): why a compile took long
    said = [line for log in (result["logs"]["compile"], result["logs"]["stderr"]) for line in log.splitlines()
            if line.startswith("[profiler_agent]") and ("header" in line or "build" in line)]
    for line in said[:12]:
        print(f"    {line[:300]}")
    for name, variant in result["variants"].items():
        print(f"    variant {name}: {variant['status']}, durations_s "
              f"{ {k: round(v, 2) for k, v in variant['durations_s'].items() if isinstance(v, (int, float))} }")
    if result["self_test"] is not None:
        print(f"    self-test: exit {result['self_test']['exit_code']}, its last line: "
              f"{(result['self_test']['output'].strip().splitlines() or [''])[-1][:120]}")


class Spans:
    """Wall time of a judging's steps around its stages, read by wrapping the agent's own functions in
    this process (the judging runs here): where the time no stage counts goes."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float]] = []
        self.marks: list[tuple[str, float]] = []  # (what, when): the judged process's stages as they began

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        spans = self.spans

        @functools.wraps(original)
        def timed(*args, **kwargs):
            started = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                spans.append((label, time.monotonic() - started))

        setattr(owner, name, timed)

    def install(self) -> None:
        from profiler_agent.judge import judging, started_ahead, timing_confirmation, warm_pool
        from profiler_agent.sandbox import process

        self.wrap(warm_pool.WarmPool, "take", "take")
        self.wrap(started_ahead.StartedAhead, "finish", "process")
        self.wrap(timing_confirmation, "add_to_result", "confirm")
        self.wrap(warm_pool.Slot, "close", "close")
        self.wrap(warm_pool.WarmPool, "refill", "refill")
        self.wrap(judging, "judge_candidate", "candidate")
        # from a process's report (its pipe's end) to its exit: a CUDA context's teardown, say
        self.wrap(process, "_wait_for_exit", "exit")
        relay, marks = warm_pool.StageRelay.__call__, self.marks

        def marked(relay_self, stage: str) -> None:
            marks.append((stage, time.monotonic()))
            relay(relay_self, stage)

        warm_pool.StageRelay.__call__ = marked

    def stage_line(self, started: float) -> str:
        """When each of the judged process's stages began, from the judging's start."""
        line = ", ".join(f"{stage} {when - started:.2f}" for stage, when in self.marks)
        self.marks.clear()
        return line

    def line(self, durations: dict, wall: float) -> str:
        """The judged process's wall beside its stages, and each step's wall, in order; then what is left."""
        took = dict.fromkeys(("take", "candidate", "confirm", "close", "refill"), 0.0)
        processes, exits = [], []
        for label, seconds in self.spans:
            if label == "process":
                processes.append(seconds)
            elif label == "exit":
                exits.append(seconds)
            else:
                took[label] += seconds
        self.spans.clear()
        judged = processes[0] if processes else 0.0
        staged = sum(durations.get(stage) or 0.0 for stage in ("compile", "correctness", "timing"))
        rest = wall - sum(took.values())
        return (f"judged process {judged:.2f} (its stages {staged:.2f}), "
                + ", ".join(f"{label} {seconds:.2f}" for label, seconds in took.items())
                + f", outside these {rest:.2f}; each process's finish: " + " ".join(f"{s:.2f}" for s in processes)
                + "; from each one's report (the profiler's start) to its exit: " + " ".join(f"{s:.2f}" for s in exits))


class ProfilerWatch:
    """When the confirmation's profiler ends, from its job (give_profiler): its profiled process gone
    (a zombie or reaped, polled in /proc), ncu's sandboxed run returned, the profiler collected. Beside
    the process's own "all done at" (its clock starts as its job comes): where the rest of its time goes."""

    TARGET = "profiler_agent.graders.profiled_target"

    def __init__(self) -> None:
        self.given = self.gone = self.returned = self.collected = None

    def install(self) -> None:
        from profiler_agent.judge import ncu_profiling

        watch = self

        def after(owner, name: str, attribute: str, poll: bool = False) -> None:
            original = getattr(owner, name)

            @functools.wraps(original)
            def wrapped(*args, **kwargs):
                try:
                    return original(*args, **kwargs)
                finally:
                    setattr(watch, attribute, time.monotonic())
                    if poll:
                        threading.Thread(target=watch.poll, daemon=True).start()

            setattr(owner, name, wrapped)

        after(ncu_profiling, "give_profiler", "given", poll=True)
        after(ncu_profiling, "run_sandboxed", "returned")
        after(ncu_profiling, "collect_profiler", "collected")

    def find(self) -> int | None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"python" in Path(argv[0].decode(errors="replace")).name.encode() and self.TARGET.encode() in argv:
                    return int(entry.name)
        return None

    def poll(self) -> None:
        self.gone, pid, deadline = None, None, time.monotonic() + 60
        while pid is None and time.monotonic() < deadline:
            pid = self.find()
            time.sleep(0.01)
        while pid is not None and time.monotonic() < deadline:
            try:
                if Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] == "Z":
                    break
            except (OSError, IndexError):
                break
            time.sleep(0.002)
        self.gone = time.monotonic() if pid is not None else None

    def line(self) -> str:
        if self.given is None:
            return "no profiler given a job"
        since = lambda when: "-" if when is None else f"{when - self.given:.2f}"  # noqa: E731
        line = (f"from its job: profiled process gone at {since(self.gone)}, ncu's run returned at "
                f"{since(self.returned)}, collected at {since(self.collected)}")
        self.given = self.gone = self.returned = self.collected = None
        return line


def median_or_none(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", action="append", type=Path, help="repeatable (default: every bench bundle)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--keep-warm", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--cache-dir", type=Path, help="default: a fresh one")
    parser.add_argument("--no-prebuild", action="store_true")
    parser.add_argument("--cold", action="append", type=Path,
                        help="then judge a copy of this bundle whose build is not cached (repeatable): the "
                             "cold compile as a judging with its processes waiting sees it")
    parser.add_argument("--gap", type=float, default=0.0,
                        help="seconds between judgings, not counted (an agent whose queue is not full)")
    args = parser.parse_args()
    from profiler_agent.bundles.bundle import open_bundle
    from profiler_agent.judge.judging import WARM_NOTE, judge_bundle
    from profiler_agent.judge.options import JudgeOptions

    bundles = args.bundle or default_bundles()
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="judging-cost-"))
    if not args.no_prebuild:
        started = time.monotonic()
        print(f"building {len(bundles)} bundles at once", flush=True)
        prebuild(bundles, args.device, cache)
        print(f"built in {time.monotonic() - started:.1f} s", flush=True)
    options = JudgeOptions(device=args.device, cache_dir=cache, keep_warm=args.keep_warm)
    spans = Spans()
    spans.install()
    watch = ProfilerWatch()
    watch.install()
    measured: list[float] = []
    passed: list[float] = []  # the honest bundles' and the adversarial ones the judge let through
    honest: list[float] = []  # the bundles that are not adversarial (adv-*): what contestants send
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    profiler_waits: list[float] = []  # how long a confirmation's job waited for its profiler (< 0: it was ready first)
    for round_ in range(args.rounds):
        for bundle_path in bundles:
            time.sleep(args.gap)
            with tempfile.TemporaryDirectory(prefix="judging-cost-bundle-") as tmp:
                bundle = open_bundle(bundle_path, Path(tmp))
                started = time.monotonic()
                result = judge_bundle(bundle, options)
                wall = time.monotonic() - started
            warm = WARM_NOTE in result["logs"]["stderr"]
            counted = warm if args.keep_warm else round_ > 0
            durations = {k: round(v, 2) for k, v in result["durations_s"].items() if isinstance(v, (int, float))}
            print(f"{bundle_path.name} (round {round_ + 1}): {result['status']} wall {wall:.1f} s, "
                  f"processes waiting: {'yes' if warm else 'no'}; durations_s {durations}", flush=True)
            for line in result["logs"]["stderr"].splitlines():
                if line.startswith(COST_NOTE):  # the confirmation's own stages (measure.confirm)
                    print(f"    confirmation: {line.removeprefix(COST_NOTE)}", flush=True)
                    waited = re.search(r"its job waited ([\d.]+) s for it|ready ([\d.]+) s before its job", line)
                    if waited and counted:
                        profiler_waits.append(float(waited.group(1)) if waited.group(1) else -float(waited.group(2)))
                elif line.startswith(TIMING_NOTE):  # the timing phase's (measure.models)
                    print(f"    timing: {line.removeprefix(TIMING_NOTE)}", flush=True)
            print(f"    around the stages: {spans.line(result['durations_s'], wall)}", flush=True)
            print(f"    the judged process's stages began at: {spans.stage_line(started)}", flush=True)
            print(f"    the profiler {watch.line()}", flush=True)
            if counted:
                measured.append(wall)
                if result["status"] == "passed":
                    passed.append(wall)
                if not bundle_path.name.startswith("adv-"):
                    honest.append(wall)
                for stage in STAGES:
                    if isinstance(result["durations_s"].get(stage), (int, float)):
                        stages[stage].append(result["durations_s"][stage])
    print(f"\nmedian wall of {len(measured)} warm judgings: {median_or_none(measured)} s "
          f"(min {min(measured, default=0):.1f}, max {max(measured, default=0):.1f}); per stage (median s): "
          + ", ".join(f"{stage} {median_or_none(values)}" for stage, values in stages.items()))
    print(f"median wall of the {len(passed)} warm judgings that passed: {median_or_none(passed)} s")
    print(f"median wall of the {len(honest)} warm judgings of honest bundles: {median_or_none(honest)} s")
    late = [w for w in profiler_waits if w > 0]
    print(f"the confirmation's profiler was ready before its job in {len(profiler_waits) - len(late)} of "
          f"{len(profiler_waits)} warm judgings; jobs that waited for it: {len(late)}, "
          f"{sum(late):.2f} s in all, at most {max(late, default=0):.2f} s")
    for bundle_path in args.cold or []:
        cold_judging(bundle_path, options, args.gap)
    print("\nbare processes:")
    for name, seconds in bare_costs(args.device):
        print(f"   {name}: {seconds:.1f} s")


if __name__ == "__main__":
    main()
