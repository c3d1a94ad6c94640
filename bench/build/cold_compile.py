"""Cold compile of a load_inline bundle, with and without each option that may cut it, and where the
time goes (ninja's own log: main.cpp's g++, the .cu's nvcc, the link).

    python bench/build/cold_compile.py                      # examples/001-example on the GPU
    python bench/build/cold_compile.py --device cpu         # examples/relu-cpu (the C++ half only)
    python bench/build/cold_compile.py --only default,pch   # some variants

Each variant imports the candidate in a fresh process with an empty TORCH_EXTENSIONS_DIR (a cold
build). Variants:
- default: torch's own build (its arch choice: the visible GPU's), no header help.
- slim: CUDA files with the slim torch/extension.h (profiler_agent.executors.slim_header).
- judged: as a judged process builds: the precompiled header for main.cpp, the slim one for CUDA and
  the nvcc front that runs cudafe++ and the device passes side by side (bundles.nvcc_parallel).
- judged-plain-nvcc: judged with torch's own nvcc (PROFILER_AGENT_PARALLEL_NVCC=0; judged sets it to 1).
- pch: with the agent's precompiled torch/extension.h (profiler_agent.executors.pch) for main.cpp;
  preparing it is a one-off per host and set of flags, shown on its own line.
- arch-own: TORCH_CUDA_ARCH_LIST set to the GPU's compute capability alone (CUDA).
- arch-many: TORCH_CUDA_ARCH_LIST="8.0;8.6;8.9;9.0+PTX", what building for several GPUs costs (CUDA).
- max-jobs-1: MAX_JOBS=1 (ninja builds main.cpp and the .cu one after the other).
- no-ccache: TORCH_NO_COMPILER_WRAPPER=1 (torch puts ccache in front of the compilers where installed).
- ccache-warm: where ccache is installed, the same build again into a fresh folder: what a rejudge
  on a host that lost its build cache costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

CANDIDATES = {"cuda": REPO / "examples" / "001-example" / "example_cudacode.py",
              "cpu": REPO / "examples" / "relu-cpu" / "cudacode.py"}
EXTRA_CFLAGS = {"cuda": [], "cpu": ["-O3"]}  # what each example passes to load_inline

# torch is imported before the clock starts, as in a judged process: what follows is what a judging
# reports as its compile time (durations_s.compile: the candidate's import)
IMPORT_CANDIDATE = r"""
import os, runpy, sys, time
import torch
sys.path.insert(0, os.path.dirname(sys.argv[1]))
from profiler_agent.executors import nvcc_front_install as nvcc_install, pch, slim_header
pch.install(sys.argv[2] or None)
if sys.argv[3] == "slim":
    slim_header.install()
    nvcc_install.install()  # as judged processes with PROFILER_AGENT_PARALLEL_NVCC=1 (the variant sets it)
started = time.monotonic()
runpy.run_path(sys.argv[1])
print(f"COMPILE_S {time.monotonic() - started:.3f}")
"""


def ninja_steps(build_root: Path) -> dict[str, float]:
    """Seconds per ninja target of the build(s) under `build_root` (.ninja_log: start, end ms)."""
    steps: dict[str, float] = {}
    for log in build_root.rglob(".ninja_log"):
        for line in log.read_text().splitlines()[1:]:
            fields = line.split("\t")
            if len(fields) >= 4:
                target = Path(fields[3]).name
                steps[target] = steps.get(target, 0.0) + (int(fields[1]) - int(fields[0])) / 1000
    return steps


def cold_build(candidate: Path, env_changes: dict[str, str], pch_root: Path | None,
               extensions: Path | None = None, slim: bool = False) -> tuple[float, float | None, dict[str, float], str]:
    """The process's wall time, the candidate's import alone (the judged compile time), ninja's steps."""
    extensions = extensions or Path(tempfile.mkdtemp(prefix="compile-bench-"))
    env = {**os.environ, **env_changes, "TORCH_EXTENSIONS_DIR": str(extensions),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env = {k: v for k, v in env.items() if v is not None}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", IMPORT_CANDIDATE, str(candidate), str(pch_root or ""),
                           "slim" if slim else ""],
                          env=env, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    error = "" if done.returncode == 0 else (done.stderr or done.stdout)[-300:].replace("\n", " ")
    compile_s = next((float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("COMPILE_S ")), None)
    return wall, compile_s, ninja_steps(extensions), error


def gpu_arch() -> str | None:
    from profiler_agent.executors.build_cache import gpu_compute_capability

    capability = gpu_compute_capability()
    return None if capability == "unknown" else capability


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--only", help="comma-separated variants")
    parser.add_argument("--pch-root", type=Path, help="the agent's precompiled headers to use (prepare-pch's folder, "
                        "kept); default: a folder of its own, prepared here and removed after")
    args = parser.parse_args()
    candidate = CANDIDATES[args.device]
    with_cuda = args.device == "cuda"
    ccache = shutil.which("ccache")
    arch = gpu_arch() if with_cuda else None
    variants = ["default", "pch", "slim", "judged", "judged-plain-nvcc", "max-jobs-1", "no-ccache"]
    if with_cuda:
        variants += ["arch-own", "arch-many"]
    if ccache:
        variants.append("ccache-warm")
    if args.only:
        variants = [v for v in variants if v in args.only.split(",")]

    from profiler_agent.executors import pch

    pch_root = args.pch_root or Path(tempfile.mkdtemp(prefix="compile-bench-pch-"))
    rows = []
    print(f"candidate {candidate.relative_to(REPO)}; cpus {os.cpu_count()}; ccache {ccache or 'not installed'}; "
          f"GPU arch {arch or 'n/a'}; compiler {pch.torch_cflags([], with_cuda)[0]}", flush=True)
    if any(variant in ("pch", "judged", "judged-plain-nvcc") for variant in variants):
        started = time.monotonic()
        pch.prepare(pch_root, EXTRA_CFLAGS[args.device], with_cuda)
        print(f"preparing the precompiled header (one-off per host and flags): {time.monotonic() - started:.1f} s",
              flush=True)
    for variant in variants:
        env: dict[str, str] = {}
        root = None
        if variant in ("pch", "judged", "judged-plain-nvcc"):
            root = pch_root
        env["PROFILER_AGENT_PARALLEL_NVCC"] = "1" if variant == "judged" else "0"
        if variant == "max-jobs-1":
            env["MAX_JOBS"] = "1"
        elif variant == "no-ccache":
            env["TORCH_NO_COMPILER_WRAPPER"] = "1"
        elif variant == "arch-own":
            if arch is None:
                print("arch-own: no GPU compute capability from NVML; skipped")
                continue
            env["TORCH_CUDA_ARCH_LIST"] = arch
        elif variant == "arch-many":
            env["TORCH_CUDA_ARCH_LIST"] = "8.0;8.6;8.9;9.0+PTX"
        elif variant == "ccache-warm":
            env["CCACHE_DIR"] = tempfile.mkdtemp(prefix="compile-bench-ccache-")
            cold_build(candidate, env, None)  # fills the ccache
        wall, compile_s, steps, error = cold_build(candidate, env, root,
                                                   slim=variant in ("slim", "judged", "judged-plain-nvcc"))
        rows.append((variant, wall, compile_s, steps, error))
        print(f"  {variant}: {wall:.1f} s", flush=True)

    # compile s: the candidate's import alone (a judging's compile time); wall s adds python and torch's import
    print(f"\n{'variant':<17} {'wall s':>7} {'compile s':>9}  {'main.o s':>8} {'cuda.o s':>8} {'link s':>7}  note")
    for variant, wall, compile_s, steps, error in rows:
        main_o = next((v for k, v in steps.items() if k == "main.o"), None)
        cuda_o = sum(v for k, v in steps.items() if k.endswith(".cuda.o")) or None
        link = next((v for k, v in steps.items() if k.endswith(".so")), None)
        cell = lambda x: f"{x:8.1f}" if x is not None else f"{'-':>8}"  # noqa: E731
        print(f"{variant:<17} {wall:7.1f} {cell(compile_s)} {cell(main_o)} {cell(cuda_o)} {cell(link)[1:]}  {error or ''}")
    if args.pch_root is None:
        shutil.rmtree(pch_root, ignore_errors=True)


if __name__ == "__main__":
    main()
