"""Where nvcc spends a load_inline build's time, and what build options change it.

    python bench/build/nvcc_stages.py [--candidate examples/001-example/example_cudacode.py]

Builds the candidate once cold (as a judged process does) to get torch's own nvcc command from
build.ninja, then compiles the generated .cu again under variants, all at once (one core each),
each with `nvcc -time` so every sub-step (preprocessing, cicc, ptxas, cudafe++, the host compiler)
has its seconds:
- default: torch's command as is.
- host-O0 / host-O1: nvcc's host optimization level (`-O0`, `-O1`; nvcc's default is -O3).
- slim-header: an include folder searched first whose torch/extension.h holds torch/types.h
  alone (ATen and the torch:: names, no Python bindings, nn, optim, autograd API).
- slim-header-O1: both.
- preprocess-only: `-E`, the cost of reading the headers.
- narrow-header: torch/types.h and torch/extension.h hold the tensor class, a few factory ops (empty, zeros, their
  _like forms), TORCH_CHECK and the torch:: dtype names: no ATen/ATen.h, no op declarations.
- narrow+context: that, and ATen/cuda/CUDAContext.h holds the current-stream call and the launch
  check alone (c10's CUDA stream and exception headers).
- narrow+context-threads2: that with `--threads 2` (do the host and device front ends overlap?).
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.build.cold_compile import cold_build  # noqa: E402

SLIM_EXTENSION_H = "#pragma once\n#include <torch/types.h>\n"
NARROW_EXTENSION_H = """#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Exception.h>
namespace torch {
using namespace at;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
}
"""
NARROW_CUDA_CONTEXT_H = """#pragma once
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
namespace at::cuda { using namespace c10::cuda; }
"""


def ninja_variables(build_ninja: Path) -> dict[str, str]:
    variables = {}
    for line in build_ninja.read_text().splitlines():
        if " = " in line and not line.startswith((" ", "\t", "rule", "build")):
            name, value = line.split(" = ", 1)
            variables[name.strip()] = value.strip()
    return variables


def nvcc_command(build_dir: Path) -> tuple[list[str], Path]:
    variables = ninja_variables(build_dir / "build.ninja")
    source = next(build_dir.glob("*.cu"))
    command = [variables.get("nvcc", "nvcc"), *shlex.split(variables.get("cuda_cflags", "")), "-c", str(source),
               *shlex.split(variables.get("cuda_post_cflags", ""))]
    return command, source


def stage_seconds(time_file: Path) -> dict[str, float]:
    """nvcc -time's CSV: one row per sub-step, its duration in ms."""
    seconds: dict[str, float] = {}
    if not time_file.exists():
        return seconds
    with open(time_file, newline="") as f:
        for row in csv.reader(f):
            # ..., tool, metric, unit: the duration is the second last field ("2944.3091", "ms")
            if len(row) < 3 or not row[-2].strip().replace(".", "", 1).isdigit():
                continue
            phase = row[1].strip() or row[0].strip()
            seconds[phase] = seconds.get(phase, 0.0) + float(row[-2]) / 1000
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidate", default=str(REPO / "examples" / "001-example" / "example_cudacode.py"))
    parser.add_argument("--only", help="comma-separated variants (default: all)")
    args = parser.parse_args()
    extensions = Path(tempfile.mkdtemp(prefix="nvcc-stages-"))
    wall, _, steps, error = cold_build(Path(args.candidate), {}, None, extensions)
    print(f"cold build {wall:.1f} s; ninja steps {({k: round(v, 1) for k, v in steps.items()})} {error}", flush=True)
    build_dir = next(p.parent for p in extensions.rglob("build.ninja"))
    base, source = nvcc_command(build_dir)
    print("nvcc command:", shlex.join(base), flush=True)
    slim = extensions / "slim-include"
    (slim / "torch").mkdir(parents=True)
    (slim / "torch" / "extension.h").write_text(SLIM_EXTENSION_H)
    narrow = extensions / "narrow-include"
    (narrow / "torch").mkdir(parents=True)
    # load_inline's generated .cu starts with torch/types.h: that one is narrowed too
    (narrow / "torch" / "types.h").write_text(NARROW_EXTENSION_H)
    (narrow / "torch" / "extension.h").write_text("#pragma once\n#include <torch/types.h>\n")
    narrow_context = extensions / "narrow-context-include"
    (narrow_context / "torch").mkdir(parents=True)
    (narrow_context / "ATen" / "cuda").mkdir(parents=True)
    (narrow_context / "torch" / "types.h").write_text(NARROW_EXTENSION_H)
    (narrow_context / "torch" / "extension.h").write_text("#pragma once\n#include <torch/types.h>\n")
    (narrow_context / "ATen" / "cuda" / "CUDAContext.h").write_text(NARROW_CUDA_CONTEXT_H)
    variants = {
        "narrow-header": ["-I", str(narrow)],
        "narrow+context": ["-I", str(narrow_context)],
        # do cudafe++ (host side) and cicc (device side), which need not wait for each other, overlap?
        "narrow+context-threads2": ["-I", str(narrow_context), "--threads", "2"],
        "default": [],
        "host-O0": ["-O0"],
        "host-O1": ["-O1"],
        "slim-header": ["-I", str(slim)],
        "slim-header-O1": ["-I", str(slim), "-O1"],
        "preprocess-only": ["-E"],
    }
    if args.only:
        variants = {name: variants[name] for name in args.only.split(",")}
    running = {}
    for name, extra in variants.items():
        out = extensions / f"{name}.o"
        time_file = extensions / f"{name}.time.csv"
        # extra first: an -I before torch's own include folders is searched first
        command = [base[0], *extra, *base[1:], "-o", str(out), "-time", str(time_file)]
        if "-E" in extra:
            command = [base[0], *extra, *[a for a in base[1:] if a != "-c"], "-o", str(out)]
        running[name] = (subprocess.Popen(command, cwd=build_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True), time.monotonic(), time_file)
    ended: dict[str, float] = {}
    while len(ended) < len(running):
        for name, (process, started, _) in running.items():
            if name not in ended and process.poll() is not None:
                ended[name] = time.monotonic() - started
        time.sleep(0.05)
    print(f"\n{'variant':<16} {'wall s':>7}  ok  stages (s)")
    for name, (process, started, time_file) in running.items():
        output = process.stdout.read()
        stages = stage_seconds(time_file)
        top = ", ".join(f"{k} {v:.1f}" for k, v in sorted(stages.items(), key=lambda kv: -kv[1])[:6])
        print(f"{name:<16} {ended[name]:7.1f}  {'y' if process.returncode == 0 else 'n'}   {top}")
        if process.returncode != 0:
            print("   ", output[-600:].replace("\n", "\n    "))
    for name, (_, _, time_file) in running.items():
        if time_file.exists():
            print(f"\nnvcc -time, {name}:\n" + time_file.read_text()[:3000])
    print(f"\n(all variants ran at once, one core each, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
