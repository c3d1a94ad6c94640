"""The judge harness measured on a GPU: precision, accuracy, cost, and hostile bundles.

    python bench/judge/harness.py precision --out DIR   # 5 kernels x 10 judgings, do_bench, ncu
    python bench/judge/harness.py hostile --out DIR     # hostile bundles: verdicts and flags
    python bench/judge/harness.py render [DIR]          # docs/measurement.md's tables from DIR/*.json

All bundles share one candidate (bench/fixtures/kernels/cudacode.py; `op.txt` picks the kernel), so the
whole bench compiles once. Run on the device machine in one call per part (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
KERNELS = REPO / "bench" / "fixtures" / "kernels" / "cudacode.py"
RESULTS = REPO / "bench" / "results"
CACHE = REPO / "bench" / ".cache" / "builds"  # git-ignored: kept on the device between calls

RELU_REFERENCE = """
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
N = {n}
def get_inputs():
    return [torch.randn(N)]
def get_init_inputs():
    return []
"""
GEMM_REFERENCE = """
import torch, torch.nn as nn
torch.backends.cuda.matmul.allow_tf32 = False
class Model(nn.Module):
    def forward(self, a, b):
        return a @ b
S = {n}
def get_inputs():
    return [torch.randn(S, S), torch.randn(S, S)]
def get_init_inputs():
    return []
"""
SOFTMAX_REFERENCE = """
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
R, C = {n}
def get_inputs():
    return [torch.randn(R, C)]
def get_init_inputs():
    return []
"""

TIMED = [
    # name, reference template, size, op
    ("relu-1M", RELU_REFERENCE, 1 << 20, "relu"),
    ("relu-16M", RELU_REFERENCE, 1 << 24, "relu"),
    ("relu-64M", RELU_REFERENCE, 1 << 26, "relu"),
    ("gemm-naive-1024", GEMM_REFERENCE, 1024, "gemm"),
    ("softmax-4096x4096", SOFTMAX_REFERENCE, (4096, 4096), "softmax"),
]


def make_bundle(root: Path, name: str, reference: str, candidate: str | None = None, op: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "torchcode.py").write_text(textwrap.dedent(reference))
    if candidate is None:
        shutil.copy(KERNELS, folder / "cudacode.py")
    else:
        (folder / "cudacode.py").write_text(textwrap.dedent(candidate))
    if op is not None:
        (folder / "op.txt").write_text(op)
    return folder


def judge(bundle: Path, **options) -> dict:
    from profiler_agent.bundles.bundle import locate_bundle
    from profiler_agent.judge.judging import judge_bundle
    from profiler_agent.judge.options import JudgeOptions

    started = time.monotonic()
    result = judge_bundle(locate_bundle(bundle), JudgeOptions(device="cuda", cache_dir=CACHE, **options))
    result["_bench_wall_s"] = time.monotonic() - started
    return result


def use_harness_build(bundle: Path) -> None:
    """Point load_inline at the harness's own build folder of the shared candidate (no second compile)."""
    from profiler_agent.executors import build_cache
    from profiler_agent.sandbox import privileges

    builds = build_cache.reachable_cache_dir(CACHE, privileges.sandbox_user())
    os.environ["TORCH_EXTENSIONS_DIR"] = str(build_cache.extensions_dir(builds, bundle / "cudacode.py", "cuda"))


def candidate_module(bundle: Path):
    from profiler_agent.bundles.module_loading import import_file

    use_harness_build(bundle)
    sys.path.insert(0, str(bundle))
    try:
        return import_file(bundle / "cudacode.py", "bench")
    finally:
        sys.path.remove(str(bundle))


def do_bench_ms(bundle: Path) -> float | None:
    import torch
    import triton.testing

    from profiler_agent.bundles.module_loading import import_file

    reference = import_file(bundle / "torchcode.py", "ref")
    model = candidate_module(bundle).ModelNew().cuda()
    torch.manual_seed(0)
    inputs = [t.cuda() for t in reference.get_inputs()]
    with torch.no_grad():
        return float(triton.testing.do_bench(lambda: model(*inputs), warmup=100, rep=1000, return_mode="median"))


NCU_TARGET = REPO / "bench" / "judge" / "ncu_target.py"
NCU_METRICS = "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum"


def ncu_profile(bundles: list[Path], out: Path) -> dict[str, dict]:
    """gpu__time_duration and DRAM bytes of the candidate's kernels, 3 launches each after a warm-up."""
    if shutil.which("ncu") is None:
        return {}
    command = ["ncu", "--clock-control", "none", "--csv", "--metrics", NCU_METRICS,
               "-k", "regex:relu_kernel|gemm_naive_kernel|softmax_kernel",
               sys.executable, str(NCU_TARGET), *map(str, bundles)]
    use_harness_build(bundles[0])
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    (out / "ncu.log").write_text(completed.stdout[-200000:] + "\n--- stderr ---\n" + completed.stderr[-50000:])
    from profiler_agent.judge.ncu_output import parse_launches  # the agent's parser: thousands separators, units

    def med(values):
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    launches = parse_launches(completed.stdout)
    found = {}
    for index, bundle in enumerate(bundles):
        group = launches[index * 4 + 1:index * 4 + 4]  # the first launch of each is the warm-up
        if not group:
            continue
        found[bundle.name] = {
            "duration_ms": med([k.duration_ms for k in group]),
            "dram_read_bytes": med([k.dram_read_bytes for k in group]),
            "dram_write_bytes": med([k.dram_write_bytes for k in group]),
        }
    return found


def run_precision(out: Path, repeats: int, budget_s: float, compare: bool = True, only=()) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-"))
    bundles = [make_bundle(root, name, ref.format(n=n), op=op) for name, ref, n, op in TIMED
               if not only or name in only]
    report = {"device": None, "kernels": {}, "started": time.time()}
    save = lambda: (out / "precision.json").write_text(json.dumps(report, indent=1))
    judged = {b.name: [judge(b, timing_budget_s=budget_s)] for b in bundles}  # the first one compiles
    for bundle in bundles if compare else []:  # the comparisons next, while the lease is young
        entry = report["kernels"].setdefault(bundle.name, {})
        try:
            entry["do_bench_ms"] = do_bench_ms(bundle)
        except Exception as exc:  # noqa: BLE001  (recorded, the other figures still count)
            entry["do_bench_error"] = repr(exc)
    for name, figures in (ncu_profile(bundles, out) if compare else {}).items():
        report["kernels"][name]["ncu"] = figures
    save()
    for bundle in bundles:
        runs = judged[bundle.name]
        while len(runs) < repeats + 1:
            runs.append(judge(bundle, timing_budget_s=budget_s))
            result = runs[-1]
            print(bundle.name, len(runs), result["status"], result["timing"]["candidate"]["median_ms"],
                  result["durations_s"], flush=True)
        runs = runs[1:]  # the compiling judgement is not one of the 10
        report["device"] = runs[-1]["device"]
        medians = [r["timing"]["candidate"]["median_ms"] for r in runs if r["timing"]["candidate"]["median_ms"]]
        ref_medians = [r["timing"]["reference"]["median_ms"] for r in runs if r["timing"]["reference"]["median_ms"]]
        report["kernels"].setdefault(bundle.name, {}).update({
            "statuses": [r["status"] for r in runs],
            "flags": sorted({f for r in runs for f in r["flags"]}),
            "candidate_medians_ms": medians,
            "reference_medians_ms": ref_medians,
            "runs": [r["timing"]["candidate"]["runs"] for r in runs],
            "batched_ms": [r["timing"]["candidate"].get("batched_ms") for r in runs],
            "overhead_pct": [r["timing"]["candidate"].get("overhead_pct") for r in runs],
            "timing_s": [r["durations_s"]["timing"] for r in runs],
            "correctness_s": [r["durations_s"]["correctness"] for r in runs],
            "compile_s": [r["durations_s"]["compile"] for r in runs],
            "total_s": [r["durations_s"]["total"] for r in runs],
            "last": {k: runs[-1][k] for k in ("metrics", "telemetry", "correctness", "timing")},
            "stderr_tail": runs[-1]["logs"]["stderr"][-1500:],
        })
        save()
    report["finished"] = time.time()
    save()


PLAIN_RELU = """
import torch, torch.nn as nn
PRELUDE
class ModelNew(nn.Module):
    def forward(self, x):
        BODY
"""


def plain(prelude: str, body: str) -> str:
    return PLAIN_RELU.replace("PRELUDE", prelude).replace("BODY", body)

HOSTILE = [
    # name, candidate (None: the shared kernels with op), op, options, what a right verdict is
    ("honest relu (control)", None, "relu", {}, "passed"),
    ("unwritten output (kernel never launched)", None, "unwritten", {}, "wrong_answer"),
    ("returns its first output again", None, "cached", {}, "wrong_answer"),
    ("work left on a side stream", None, "side_stream", {}, "wrong_answer: output still being written"),
    ("output noise below tolerance", None, "noise", {}, "passed + nondeterministic_output"),
    ("hung kernel (spins forever)", None, "hang", {"timeout_s": 30.0}, "timeout"),
    ("honest relu right after the hang", None, "relu", {}, "passed"),
    ("fake result printed on stdout", plain(
        "import json", 'print(json.dumps({"status": "passed", "speedup": 1000})); return torch.zeros_like(x)'),
     None, {}, "wrong_answer"),
    ("forged report on every fd, then os._exit(0)", plain(
        "import os", '[os.write(fd, b\'{"correctness": {"passed": true}}\') for fd in range(3, 64) if os.path.exists(f"/proc/self/fd/{fd}")]; os._exit(0)'),
     None, {}, "wrong_answer"),
    ("os._exit(0) during import", plain("import os; os._exit(0)", "return x"), None, {},
     "runtime_error"),
    ("patched torch.allclose / torch.testing", plain(
        "import torch.testing; torch.allclose = lambda *a, **k: True; torch.testing.assert_close = lambda *a, **k: None",
        "return torch.zeros_like(x)"), None, {}, "wrong_answer"),
    ("patched torch.cuda.Event.elapsed_time", plain(
        "torch.cuda.Event.elapsed_time = lambda self, end: 0.001", "return torch.relu(x)"),
     None, {}, "passed + timer_tampered"),
    ("patched time.perf_counter / monotonic", plain(
        "import time; time.perf_counter = lambda: 0.0; time.perf_counter_ns = lambda: 0; time.monotonic_ns = lambda: 0",
        "return torch.relu(x)"), None, {}, "passed, times unchanged"),
    ("ATen only (no custom kernel)", plain("", "return torch.relu(x)"), None, {},
     "passed + no_custom_kernel"),
    ("slow reference vs fast candidate", None, "relu", {"suspicious_speedup": 1.5}, "suspicious_speedup"),
    ("snoops env and /proc/*/environ", plain(
        "import glob, os\nprint(dict(os.environ))\nfor p in glob.glob('/proc/[0-9]*/environ'):\n    try: print(p, open(p, 'rb').read())\n    except OSError: pass",
        "return torch.relu(x)"), None, {}, "passed, no secret in any output"),
]

SECRET = "bench-secret-3b7f"


def run_hostile(out: Path, only=()) -> None:
    # started with PROFILER_AGENT_TOKEN=SECRET in its environment (bench/README.md): the snooper
    # must not find it, here or in /proc/<this process>/environ
    assert os.environ.get("PROFILER_AGENT_TOKEN") == SECRET, "start the hostile part with the secret set"
    from profiler_agent.sandbox.secret_scrub import scrub_own_secrets

    scrub_own_secrets()
    root = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    reference = RELU_REFERENCE.format(n=1 << 24)
    rows = []
    first = int(only[0]) if only else 0
    for index, (name, candidate, op, options, expected) in enumerate(HOSTILE):
        if index < first:
            continue
        ref = reference
        if "slow reference" in name:
            ref = reference.replace("return torch.relu(x)", "return torch.relu(x.double().exp().log().float())")
        bundle = make_bundle(root, f"h{index}", ref, candidate, op)
        options = dict(options)
        options.setdefault("timeout_s", 300.0)
        options["timing_budget_s"] = 1.0
        result = judge(bundle, **options)
        everything = json.dumps(result)
        rows.append({
            "name": name, "expected": expected, "status": result["status"], "flags": result["flags"],
            "candidate_median_ms": result["timing"]["candidate"]["median_ms"],
            "speedup": result["timing"]["speedup"], "wall_s": result["_bench_wall_s"],
            "secret_leaked": SECRET in everything,
            "stderr_tail": result["logs"]["stderr"][-600:],
        })
        print(rows[-1]["name"], rows[-1]["status"], rows[-1]["flags"], rows[-1]["candidate_median_ms"], flush=True)
        (out / "hostile.json").write_text(json.dumps({"rows": rows}, indent=1))


def _fmt(value, spec=".4f"):
    return "n/a" if value is None else format(value, spec)


def render(directory: Path | None) -> str:
    """From DIR/precision.json and DIR/hostile.json, or each part's own folder under bench/results."""
    precision_file = (directory or RESULTS / "precision") / "precision.json"
    hostile_file = (directory or RESULTS / "hostile") / "hostile.json"
    precision = json.loads(precision_file.read_text()) if precision_file.exists() else None
    hostile = json.loads(hostile_file.read_text()) if hostile_file.exists() else None
    lines = ["# Measurements of the judge harness", "",
             "Written by `bench/judge/harness.py render` from what `bench/judge/harness.py precision` and "
             "`hostile` recorded on the device machine (see bench/README.md for the commands).", ""]
    if precision:
        device = precision["device"] or {}
        lines += [f"Device: {device.get('name')} (driver {device.get('driver')}, torch {device.get('torch')}, "
                  f"peak {device.get('peak_gbps')} GB/s from NVML).", "",
                  "## Precision and accuracy", "",
                  "Each kernel judged 10 times (fresh process pair each time). CV = standard deviation / mean of "
                  "the 10 reported candidate medians. do_bench = `triton.testing.do_bench(..., return_mode='median')` "
                  "(per-call events, L2 cleared). ncu = Nsight Compute `gpu__time_duration` (median of 3 launches, "
                  "`--clock-control none`, cache flushed by ncu).", "",
                  "| kernel | harness median (ms) | CV | do_bench (ms) | ncu (ms) | harness/ncu | do_bench/ncu | "
                  "batched (ms) | batched/ncu | overhead share | "
                  "ncu DRAM read+write (MB) | min bytes (MB) | runs/judging | harness s/judging (no compile) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for name, k in precision["kernels"].items():
            medians = k["candidate_medians_ms"]
            mean = statistics.fmean(medians) if medians else None
            cv = statistics.stdev(medians) / mean if len(medians) > 1 else None
            median = statistics.median(medians) if medians else None
            ncu = (k.get("ncu") or {}).get("duration_ms")
            dram = k.get("ncu") or {}
            dram_mb = ((dram.get("dram_read_bytes") or 0) + (dram.get("dram_write_bytes") or 0)) / 1e6 if dram else None
            nbytes = (k["last"]["metrics"] or {}).get("bytes")
            cost = [t - (c or 0) for t, c in zip(k["total_s"], k["compile_s"])]
            batched = statistics.median([b for b in k.get("batched_ms", []) if b]) if any(k.get("batched_ms", [])) else None
            overhead = statistics.median([o for o in k.get("overhead_pct", []) if o is not None]) \
                if any(o is not None for o in k.get("overhead_pct", [])) else None
            lines.append(
                f"| {name} | {_fmt(median)} | {_fmt(cv * 100 if cv is not None else None, '.2f')}% | "
                f"{_fmt(k.get('do_bench_ms'))} | {_fmt(ncu)} | "
                f"{_fmt(median / ncu if median and ncu else None, '.3f')} | "
                f"{_fmt(k['do_bench_ms'] / ncu if k.get('do_bench_ms') and ncu else None, '.3f')} | "
                f"{_fmt(batched)} | {_fmt(batched / ncu if batched and ncu else None, '.3f')} | "
                f"{_fmt(overhead, '.1f')}% | "
                f"{_fmt(dram_mb, '.1f')} | {_fmt(nbytes / 1e6 if nbytes else None, '.1f')} | "
                f"{int(statistics.median(k['runs']))} | {_fmt(statistics.median(cost), '.1f')} |")
        lines += ["", "Statuses: " + "; ".join(f"{n}: {sorted(set(k['statuses']))} flags {k['flags']}"
                                               for n, k in precision["kernels"].items()), ""]
    if hostile:
        lines += ["## Hostile bundles on the GPU", "",
                  "| behaviour | expected | status | flags | candidate median (ms) | secret leaked | wall (s) |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for row in hostile["rows"]:
            lines.append(f"| {row['name']} | {row['expected']} | {row['status']} | {', '.join(row['flags']) or '-'} | "
                         f"{_fmt(row['candidate_median_ms'])} | {row['secret_leaked']} | {row['wall_s']:.1f} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("part", choices=("precision", "hostile", "render"))
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--out", type=Path, help="default bench/results/precision or bench/results/hostile")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--timing-budget", type=float, default=1.0, help="seconds per model pair")
    parser.add_argument("--only", nargs="*", default=(), help="kernel names (precision) or first row index (hostile)")
    parser.add_argument("--skip-compare", action="store_true", help="no do_bench / ncu (taken in an earlier call)")
    args = parser.parse_args()
    if args.part == "render":
        sys.stdout.write(render(args.directory))
        return
    args.out = args.out or RESULTS / args.part
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "host.txt").write_text(f"{platform.node()} {platform.python_version()}\n")
    if args.part == "precision":
        run_precision(args.out, args.repeats, args.timing_budget, not args.skip_compare, args.only)
    else:
        run_hostile(args.out, args.only)


if __name__ == "__main__":
    main()
