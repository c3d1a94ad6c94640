"""Launch-bound multi-kernel bundles judged on a GPU: the judging right after a cold compile
against later ones, and the true speedup from Nsight Compute.

    python bench/judge/launch_bound.py drift --out DIR [--only NAME] [--repeats 3] [--env K=V ...]
    python bench/judge/launch_bound.py truth --out DIR [--only NAME] [--cache-state kernel|call]   # ncu kernel sums
    python bench/judge/launch_bound.py aftermath --out DIR [--only NAME] [--before compile,burn,sleep,none]

`drift` judges each bundle `--repeats` times in a row with a fresh build cache, so the first
judging compiles; it prints the speedup, both medians, and the drift of each model's per-call
samples (median of the last quarter over the first). `truth` runs reference and candidate in one process under `ncu --clock-control none`, alternating
(TRUTH_CALLS calls each after a warm-up, which model goes first alternating too, each call on fresh
inputs), and sums each call's kernel durations; the true speedup is the ratio of the two medians, taken
in one profile so both see the same clocks. `--cache-state kernel` (default) keeps ncu's flush of every
cache before each kernel; `call` turns it off (`--cache-control none`) and the target flushes L2 before
each call itself, by reading a buffer as the judge's timer does, so a call's later kernels find what its
earlier ones left in L2, as they do in real use. (A flush that wrote its buffer, as the first one did: the
write-back of those dirty lines landed in each call's first kernel, about 0.2-0.3 us, a larger share of
a 6 us candidate than of its 11 us reference, which took lb-add-layernorm's truth 2-3% low.)
`aftermath` separates the compile from its aftermath: with the bundle's build cached, it judges
right after 50 s of something else (a cold compile in another process, every core busy, idling).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
BUNDLES = REPO / "bench" / "fixtures" / "bundles"
LAUNCH_BOUND = ["lb-matmul-relu", "lb-mlp-gelu", "lb-add-layernorm"]
TRUTH_CALLS = 15
# set in a truth target's environment: load_inline / load return the build already in
# TORCH_EXTENSIONS_DIR (the judge's own build folder) instead of building with this process's flags
PREBUILT_ENV = "BENCH_PREBUILT_EXTENSIONS"


def judge(bundle: Path, cache: Path, out_json: Path, env: dict, extra: list[str]) -> tuple[dict, float]:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "profiler_agent", "judge", str(bundle), "--device", "cuda",
         "--cache-dir", str(cache), "--json", str(out_json), *extra],
        cwd=REPO, env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=False,
    )
    elapsed = time.perf_counter() - started
    return (json.loads(out_json.read_text()) if out_json.exists() else {"status": "no result"}), elapsed


def drift_of(samples: list[float]) -> float | None:
    """Median of the last quarter of a run's per-call samples over the first quarter's."""
    if not samples or len(samples) < 8:
        return None
    quarter = len(samples) // 4
    first, last = statistics.median(samples[:quarter]), statistics.median(samples[-quarter:])
    return last / first if first else None


def stage_line(result: dict) -> str:
    found = re.search(r"timing phase \(s\): ([^\n]*)", ((result.get("logs") or {}).get("stderr") or ""))
    return found.group(1) if found else ""


def summary(result: dict, seconds: float) -> dict:
    timing = result.get("timing") or {}
    samples = timing.get("samples") or {}
    side = lambda name: timing.get(name) or {}  # noqa: E731
    return {
        "status": result.get("status"),
        "flags": result.get("flags"),
        "speedup": timing.get("speedup"),
        "reference_ms": side("reference").get("median_ms"),
        "candidate_ms": side("candidate").get("median_ms"),
        "reference_batched_ms": side("reference").get("batched_ms"),
        "candidate_batched_ms": side("candidate").get("batched_ms"),
        "reference_drift": drift_of(samples.get("reference") or []),
        "candidate_drift": drift_of(samples.get("candidate") or []),
        # the confirmation's figures: the judged process's candidate median, the kernels' ratio
        "candidate_reported_ms": (timing.get("confirmation") or {}).get("reported_ms"),
        "kernel_speedup": (timing.get("confirmation") or {}).get("kernel_speedup"),
        "ranked_at_kernel_ms": (timing.get("confirmation") or {}).get("ranked_at_kernel_ms"),
        "durations_s": result.get("durations_s"),
        "stages": stage_line(result),
        "wall_s": seconds,
    }


def run_drift(out: Path, names: list[str], repeats: int, env: dict, extra: list[str]) -> None:
    rows = []
    for name in names:
        cache = Path(tempfile.mkdtemp(prefix=f"lb-cache-{name}-"))
        for attempt in range(repeats):
            result, seconds = judge(BUNDLES / name, cache, out / f"{name}-{attempt}.json", env, extra)
            row = {"bundle": name, "judging": attempt, **summary(result, seconds)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    (out / "drift.json").write_text(json.dumps({"env": env, "extra": extra, "rows": rows}, indent=1))
    print(f"\n{'bundle':18} {'#':>1} {'status':8} {'speedup':>8} {'ref ms':>8} {'cand ms':>8} "
          f"{'ref drift':>9} {'cand drift':>10} {'wall s':>7}  flags")
    for r in rows:
        f = lambda v, spec=".4f": format(v, spec) if isinstance(v, (int, float)) else "-"  # noqa: E731
        print(f"{r['bundle']:18} {r['judging']:>1} {str(r['status'])[:8]:8} {f(r['speedup'], '.3f'):>8} "
              f"{f(r['reference_ms']):>8} {f(r['candidate_ms']):>8} {f(r['reference_drift'], '.2f'):>9} "
              f"{f(r['candidate_drift'], '.2f'):>10} {f(r['wall_s'], '.1f'):>7}  {','.join(r['flags'] or [])}")


def use_prebuilt_extensions() -> None:
    """load_inline and load import `<TORCH_EXTENSIONS_DIR>/<name>/<name>.so` when it is there. The judged
    build may have used flags of the harness (a precompiled header's include folder): building here
    with torch's defaults would not match them, so ninja would rebuild, in the judge's folder."""
    from torch.utils import cpp_extension

    root = Path(os.environ["TORCH_EXTENSIONS_DIR"])

    def prebuilt(build):
        def load(name, *args, **kwargs):
            folder = Path(kwargs.get("build_directory") or root / name)
            if (folder / f"{name}.so").exists() and kwargs.get("is_python_module", True):
                return cpp_extension._import_module_from_library(name, str(folder), True)
            print(f"[bench] no build of {name} in {folder}: building", file=sys.stderr, flush=True)
            return build(name, *args, **kwargs)
        return load

    cpp_extension.load_inline = prebuilt(cpp_extension.load_inline)
    cpp_extension.load = prebuilt(cpp_extension.load)


def ncu_target(bundle: Path, calls: int, flush_per_call: bool = False) -> None:
    """The profiled process: both models built alike, then `calls` calls of each, alternating, every
    call on fresh inputs in the ranges `profiler_agent call <i>` / [`profiler_agent reference`] /
    `candidate` that ncu's filter and profiler_agent.judge.ncu_output's parser read."""
    import torch

    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.bundles import module_loading as loading
    from profiler_agent.measure.nvtx_ranges import CALL_RANGE_PREFIX, CANDIDATE_RANGE, REFERENCE_RANGE
    from profiler_agent.measure.timing import L2_FLUSH_BYTES

    if os.environ.get(PREBUILT_ENV):
        use_prebuilt_extensions()
    sys.path.insert(0, str(bundle))
    api = loading.reference_api(bundle / "torchcode.py")
    device = torch.device("cuda")
    reference = loading.build_model(api.Model, api.get_init_inputs, 0, device, api.backward)
    module = loading.import_file(bundle / "cudacode.py", "candidate")
    candidate = loading.build_model(module.ModelNew, api.get_init_inputs, 0, device, api.backward)
    flush_buffer = torch.zeros(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device) if flush_per_call else None
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop

    def profiled(model, call: int, is_reference: bool) -> None:
        inputs = make_inputs(api.get_inputs, 1 + call, device)  # the same draw for both models
        if flush_buffer is not None:  # outside the ranges: not counted; a read leaves clean lines
            flush_buffer.max()
        torch.cuda.synchronize()
        push(f"{CALL_RANGE_PREFIX}{call}")
        if is_reference:
            push(REFERENCE_RANGE)
        push(CANDIDATE_RANGE)
        model(*inputs)
        torch.cuda.synchronize()
        pop()
        if is_reference:
            pop()
        pop()

    with torch.no_grad():
        warm = make_inputs(api.get_inputs, 0, device)
        reference(*warm)
        candidate(*warm)
        torch.cuda.synchronize()
        for call in range(calls):
            order = [(reference, True), (candidate, False)]
            for model, is_reference in (order if call % 2 == 0 else order[::-1]):
                profiled(model, call, is_reference)


def quarters(samples: list[float]) -> list[float]:
    q = len(samples) // 4
    return [round(statistics.median(samples[i * q:(i + 1) * q]), 4) for i in range(4)] if q else []


COMPILE_SOMETHING = """
import secrets
from torch.utils.cpp_extension import load_inline
tag = secrets.token_hex(4)
load_inline(name=f"aftermath_{tag}", cpp_sources=f"int f_{tag}();",
            cuda_sources=f"__global__ void k_{tag}() {{}}\\nint f_{tag}() {{ k_{tag}<<<1, 1>>>(); return 0; }}",
            functions=[f"f_{tag}"], verbose=False)
"""


def before_judging(what: str, seconds: float = 50.0) -> None:
    if what == "compile":
        with tempfile.TemporaryDirectory() as build:
            subprocess.run([sys.executable, "-c", COMPILE_SOMETHING], env={**os.environ, "TORCH_EXTENSIONS_DIR": build},
                           check=False)
    elif what == "burn":
        burners = [subprocess.Popen([sys.executable, "-c", f"import time\nt=time.time()+{seconds}\nwhile time.time()<t: pass"])
                   for _ in range(os.cpu_count() or 1)]
        for burner in burners:
            burner.wait()
    elif what == "sleep":
        time.sleep(seconds)


def run_aftermath(out: Path, names: list[str], befores: list[str]) -> None:
    rows = []
    for name in names:
        cache = Path(tempfile.mkdtemp(prefix=f"lb-after-{name}-"))
        judge(BUNDLES / name, cache, out / f"{name}-prewarm.json", {}, [])
        for what in befores:
            started = time.perf_counter()
            before_judging(what)
            took = time.perf_counter() - started
            result, seconds = judge(BUNDLES / name, cache, out / f"{name}-after-{what}.json", {}, [])
            samples = (result.get("timing") or {}).get("samples") or {}
            row = {"bundle": name, "before": what, "before_s": round(took, 1), **summary(result, seconds),
                   "reference_quarters": quarters(samples.get("reference") or []),
                   "candidate_quarters": quarters(samples.get("candidate") or [])}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("bundle", "before", "before_s", "speedup", "flags",
                                                  "reference_quarters", "candidate_quarters", "stages")}), flush=True)
    (out / "aftermath.json").write_text(json.dumps(rows, indent=1))


@dataclass
class Truth:
    reference_ms: float | None  # median over calls of each call's summed kernel durations
    candidate_ms: float | None
    speedup: float | None  # their ratio
    spread: list[float]  # the per-call ratios' lowest, median and highest (reference i / candidate i)
    reference_kernels: list[str]
    candidate_kernels: list[str]


def kernel_sums(bundle: Path, out: Path, env: dict, cache_state: str = "kernel") -> Truth:
    """Both models' kernel sums per call from one ncu profile (ncu_target)."""
    from profiler_agent.judge import ncu_output as ncu

    log = out / f"ncu-{bundle.name}-{cache_state}.csv"
    caches = ["--cache-control", "none"] if cache_state == "call" else []
    command = [
        shutil.which("ncu") or "ncu", "--clock-control", "none", *caches, "--target-processes", "application-only",
        "--csv", "--log-file", str(log), "--metrics", ncu.DURATION, "--nvtx",
        "--nvtx-include", f"{ncu.CANDIDATE_RANGE}/",
        sys.executable, __file__, "_target", str(bundle), str(TRUTH_CALLS), cache_state,
    ]
    subprocess.run(command, cwd=REPO, env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=False)
    candidate, reference = ncu.split_reference(ncu.parse_launches(log.read_text() if log.exists() else ""))

    def per_call(launches) -> dict[int, float]:
        sums: dict[int, float] = {}
        for launch in launches:
            sums[launch.call] = sums.get(launch.call, 0.0) + (launch.duration_ms or 0.0)
        return sums

    reference_sums, candidate_sums = per_call(reference), per_call(candidate)
    reference_ms = statistics.median(reference_sums.values()) if reference_sums else None
    candidate_ms = statistics.median(candidate_sums.values()) if candidate_sums else None
    ratios = sorted(reference_sums[i] / candidate_sums[i] for i in reference_sums
                    if candidate_sums.get(i))
    spread = [round(ratios[0], 4), round(statistics.median(ratios), 4), round(ratios[-1], 4)] if ratios else []
    names = lambda launches: sorted({launch.kernel[:60] for launch in launches})  # noqa: E731
    return Truth(reference_ms, candidate_ms, reference_ms / candidate_ms if reference_ms and candidate_ms else None,
                 spread, names(reference), names(candidate))


def run_truth(out: Path, names: list[str], cache_state: str = "kernel") -> None:
    rows = []
    for name in names:
        cache = Path(tempfile.mkdtemp(prefix=f"lb-ncu-{name}-"))
        truth = kernel_sums(BUNDLES / name, out, {"TORCH_EXTENSIONS_DIR": str(cache)}, cache_state)
        row = {"bundle": name, "cache_state": cache_state, "calls": TRUTH_CALLS,
               "reference_kernel_ms": truth.reference_ms, "candidate_kernel_ms": truth.candidate_ms,
               "true_speedup": truth.speedup, "per_call_ratio_min_median_max": truth.spread,
               "reference_kernels": truth.reference_kernels, "candidate_kernels": truth.candidate_kernels}
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / f"truth-{cache_state}.json").write_text(json.dumps(rows, indent=1))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_target":
        ncu_target(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:5] == ["call"])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("drift", "truth", "aftermath"))
    parser.add_argument("--before", default="compile,burn,sleep,none", help="aftermath: what runs before")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", action="append", help="bundle names under bench/fixtures/bundles (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], help="K=V set for the judge processes")
    parser.add_argument("--cache-state", choices=("kernel", "call"), default="kernel",
                        help="truth: ncu flushes caches before each kernel, or the target before each call")
    parser.add_argument("--judge-arg", action="append", default=[], help="extra argument for `judge`")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or LAUNCH_BOUND
    if args.mode == "drift":
        env = dict(item.split("=", 1) for item in args.env)
        run_drift(args.out, names, args.repeats, env, args.judge_arg)
    elif args.mode == "aftermath":
        run_aftermath(args.out, names, args.before.split(","))
    else:
        run_truth(args.out, names, args.cache_state)


if __name__ == "__main__":
    main()
