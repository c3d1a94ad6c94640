"""Plain nvcc against the parallel front (profiler_agent.executors.nvcc_front) on a load_inline CUDA file.

    python bench/build/nvcc_parallel.py [--candidate examples/001-example/example_cudacode.py] [--repeat 3]
                                        [--header narrow|slim|full] [--include DIR]

Takes the candidate's load_inline CUDA source and flags (load_inline is recorded, not run), writes the
.cu as load_inline does and torch's own nvcc command for it (its ninja file, written for these
sources: nothing is built), then compiles it with plain nvcc and through the front, one after the
other, alternating, `--repeat` times each, as a judged build does (the header of `--header` through
NVCC_PREPEND_FLAGS, cold: no ccache). Prints each wall time, the medians, the load average around
each compile, the front's per-step trace, and whether the objects are the same: the bytes (nvcc's
temporary file name in the object's file symbol aside), the symbols (nm), the device code
(.nv_fatbin; cuobjdump -sass where installed), and that each links into a shared library.

On a host whose torch has no CUDA (CUDA_HOME unset in torch), CUDA_HOME or /usr/local/cuda stands in,
and TORCH_CUDA_ARCH_LIST (default 9.0) picks the architecture; `--include` adds -isystem folders
for headers such a torch lacks (cusparse.h, c10/cuda/impl/cuda_cmake_macros.h).
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.build.nvcc_stages import ninja_variables  # noqa: E402
from profiler_agent.executors import nvcc_front as nvcc_parallel, nvcc_front_install as nvcc_install, slim_header  # noqa: E402

TEMP_NAME = re.compile(rb"tmpxft_[0-9a-f]{8}_")  # nvcc's temporary file names carry its pid


def recorded_load_inline(candidate: Path) -> dict:
    """The keyword arguments of the candidate's (first) load_inline call with CUDA sources."""
    from torch.utils import cpp_extension

    calls: list[dict] = []
    original = cpp_extension.load_inline

    def record(name, cpp_sources, cuda_sources=None, **kwargs):
        if cuda_sources and not calls:
            calls.append({"name": name, "cuda_sources": cuda_sources, **kwargs})
        return None

    cpp_extension.load_inline = record
    sys.path.insert(0, str(candidate.parent))
    try:
        runpy.run_path(str(candidate))
    except Exception as exc:  # noqa: BLE001  (the module may use the extension at import)
        print(f"(the candidate stopped after load_inline: {type(exc).__name__})")
    finally:
        cpp_extension.load_inline = original
    if not calls:
        sys.exit(f"{candidate}: no load_inline call with CUDA sources")
    return calls[0]


def torch_cuda_home() -> None:
    """Where torch has no CUDA, point it at the toolkit so it writes its CUDA rules."""
    from torch.utils import cpp_extension

    if not cpp_extension.CUDA_HOME:
        cpp_extension.CUDA_HOME = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")


def nvcc_command(call: dict, folder: Path) -> tuple[str, list[str], Path]:
    """(nvcc, its arguments less -o, the .cu) as torch's build.ninja has them for this call."""
    from torch.utils import cpp_extension

    sources = call["cuda_sources"]
    sources = [sources] if isinstance(sources, str) else list(sources)
    cu = folder / "cuda.cu"
    # load_inline's own preamble
    cu.write_text("\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", *sources]))
    (folder / "main.cpp").write_text("")
    ninja = folder / "build.ninja"
    cpp_extension._write_ninja_file_to_build_library(
        str(ninja), call["name"], [str(folder / "main.cpp"), str(cu)], call.get("extra_cflags") or [],
        call.get("extra_cuda_cflags") or [], [], [], call.get("extra_include_paths") or [], True, False, False)
    variables = ninja_variables(ninja)
    rule = next(line.split("=", 1)[1] for line in ninja.read_text().splitlines()
                if line.strip().startswith("command = $nvcc "))
    if "-c $in" not in rule:
        sys.exit(f"torch's nvcc rule changed: {rule}")
    nvcc = shlex.split(variables["nvcc"])[-1]
    # torch with CUDA writes the -MD -MF $out.d of a judged build (torch without it leaves it out)
    args = ["-MD", "-MF", "OUT.d", *shlex.split(variables.get("cuda_cflags", "")), "-c", str(cu),
            *shlex.split(variables.get("cuda_post_cflags", ""))]
    return nvcc, args, cu


def header_folder(kind: str, cu: Path, root: Path) -> list[str]:
    if kind == "narrow":
        return [f"-I{slim_header.narrow_include_folder(root / 'narrow', slim_header.ops_named([cu], slim_header.aten_ops_folder()))}"]
    if kind == "slim":
        return [f"-I{slim_header.slim_include_folder(root / 'slim')}"]
    return []


def compile_once(command: list[str], out: Path, env: dict[str, str], cwd: Path) -> tuple[float, str, tuple]:
    command = [out.with_suffix(".d").as_posix() if a == "OUT.d" else a for a in command] + ["-o", str(out)]
    load_before = os.getloadavg()
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"compile failed ({done.returncode}): {shlex.join(command)}\n{done.stdout}{done.stderr}")
    return wall, done.stderr, (load_before, os.getloadavg())


def run_text(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True).stdout


def compare(plain: Path, parallel: Path) -> list[str]:
    lines = []
    same_bytes = TEMP_NAME.sub(b"tmpxft_", plain.read_bytes()) == TEMP_NAME.sub(b"tmpxft_", parallel.read_bytes())
    lines.append(f"object bytes (temporary name aside): {'same' if same_bytes else 'DIFFERENT'}")
    symbols = [TEMP_NAME.sub(b"tmpxft_", run_text(["nm", str(p)]).encode()) for p in (plain, parallel)]
    lines.append(f"symbols (nm, temporary name aside): {'same' if symbols[0] == symbols[1] else 'DIFFERENT'}")
    fatbins = []
    for path in (plain, parallel):
        section = path.with_suffix(".fatbin")
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", str(path), str(section)], check=True)
        fatbins.append(section.read_bytes())
    lines.append(f"device code (.nv_fatbin, {len(fatbins[0])} bytes): {'same' if fatbins[0] == fatbins[1] else 'DIFFERENT'}")
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:
        sass = [run_text([cuobjdump, "-sass", str(p)]) for p in (plain, parallel)]
        lines.append(f"cuobjdump -sass: {'same' if sass[0] == sass[1] and sass[0] else 'DIFFERENT or empty'}")
    for path in (plain, parallel):
        linked = subprocess.run(["g++", "-shared", str(path), "-o", str(path.with_suffix(".so"))], capture_output=True, text=True)
        lines.append(f"{path.name} links into a shared library: {'yes' if linked.returncode == 0 else 'NO ' + linked.stderr[-300:]}")
    depfiles = [path.with_suffix(".d") for path in (plain, parallel)]
    if all(d.exists() for d in depfiles):
        texts = [d.read_text().split(" : ", 1)[1] for d in depfiles]
        lines.append(f"dependency files (past the target): {'same' if texts[0] == texts[1] else 'DIFFERENT'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidate", default=str(REPO / "examples" / "001-example" / "example_cudacode.py"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--header", choices=("narrow", "slim", "full"), default="narrow")
    parser.add_argument("--include", action="append", default=[], help="an -isystem folder to add (see above)")
    args = parser.parse_args()

    torch_cuda_home()
    folder = Path(tempfile.mkdtemp(prefix="nvcc-parallel-bench-"))
    nvcc, nvcc_args, cu = nvcc_command(recorded_load_inline(Path(args.candidate)), folder)
    nvcc_args += [flag for include in args.include for flag in ("-isystem", include)]
    prepend = " ".join(header_folder(args.header, cu, folder) + [os.environ.get("NVCC_PREPEND_FLAGS", "")]).strip()
    env = {**os.environ, "NVCC_PREPEND_FLAGS": prepend, nvcc_parallel.TRACE_ENV: "1"}
    front = shlex.split(nvcc_install.front_command(nvcc))  # what judged builds' build.ninja names
    print(f"cpus {os.cpu_count()}; header {args.header}; NVCC_PREPEND_FLAGS={prepend}")
    print("nvcc command:", shlex.join([nvcc, *nvcc_args, "-o", "OUT.o"]), flush=True)

    walls: dict[str, list[float]] = {"plain": [], "parallel": []}
    for round_ in range(args.repeat):
        order = ("plain", "parallel") if round_ % 2 == 0 else ("parallel", "plain")
        for variant in order:
            command = [nvcc, *nvcc_args] if variant == "plain" else [*front, *nvcc_args]
            wall, trace, (before, after) = compile_once(command, folder / f"{variant}{round_}.o", env, folder)
            walls[variant].append(wall)
            print(f"  {variant:<8} round {round_ + 1}: {wall:6.1f} s   load average {before[0]:.1f} -> {after[0]:.1f}",
                  flush=True)
            if variant == "parallel":
                print("    " + "\n    ".join(line for line in trace.splitlines() if line.startswith("[nvcc_parallel]")))
    plain_s, parallel_s = statistics.median(walls["plain"]), statistics.median(walls["parallel"])
    print(f"\nmedian of {args.repeat}: plain nvcc {plain_s:.1f} s, parallel front {parallel_s:.1f} s "
          f"({plain_s - parallel_s:+.1f} s, x{plain_s / parallel_s:.2f})")
    print("\n".join(compare(folder / "plain0.o", folder / "parallel0.o")))
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
