"""An nvcc front for judged builds: nvcc's host and device steps run side by side.

    python nvcc_parallel.py REAL_NVCC ARGS...     (what PYTORCH_NVCC names in torch's build.ninja)

nvcc compiles a .cu one step after another: the host side (`gcc -E`, then cudafe++), the device side
(`gcc -E -D__CUDA_ARCH__`, cicc, ptxas, fatbinary), then `gcc -c` of cudafe++'s output, which
includes what the device side made. With torch's headers cudafe++, cicc and the final gcc each take
about a third of the time (each parses ATen's Tensor headers), and the two sides do not need each
other but for one file: the module id, which cudafe++ (CUDA 13; cicc in CUDA 12) writes and the other
reads. It is a hash of the source's name and path, not of its text, so here the reader writes its
own; the two are compared before the final compile.

The steps are nvcc's own (`nvcc --dryrun` with the same arguments), run in a private temporary folder.
The dependency file that `-MD` asks for (nvcc's "Filter Dependencies": the files named in the line
markers of every preprocessed file, device and host) is written as nvcc writes it. The two front ends
at once need their memory together: above a preprocessed size (SIDE_BY_SIDE_MAX_MB: torch's full
header) they run one after the other. On anything unexpected (an invocation that
is not a plain `-c`, a step of an unknown shape, a failing step, module ids that differ) the real
nvcc runs with the same arguments: a build never fails because of this front, and a broken source
gets nvcc's own messages (except while slim_header tries its narrower headers, RETRIED_ENV: there the
failing step's own messages end the compile, which is done again with the next header anyway).

`nvcc_install.install()` makes the load_inline / load builds of a process use it (PYTORCH_NVCC during
the build). This file imports nothing outside the standard library: ninja runs it by path.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

TRACE_ENV = "PROFILER_AGENT_NVCC_TRACE"  # "1": each step's seconds on stderr
# "1" while a failed build is built again anyway (slim_header's narrow and slim headers): a failing
# step's own messages end the compile, without nvcc's run from the start
RETRIED_ENV = "PROFILER_AGENT_NVCC_RETRIED"
# The two front ends at once take their memory together: with torch's headers about 100 MB (cudafe++)
# and 100-170 MB (cicc) per MB of preprocessed source (CUDA 13; the narrow header's 8 MB: 0.8 + 0.9 GB,
# the slim one's 14 MB: 1.2 + 1.4 GB, the full torch/extension.h's 17 MB: 2.0 + 2.9 GB). Above this
# size (MB of the largest preprocessed file) they run one after the other, so that a judged build's
# peak stays near plain nvcc's for the full header (2.9 GB, cicc) under a compile memory limit.
SIDE_BY_SIDE_MAX_MB_ENV = "PROFILER_AGENT_NVCC_SIDE_BY_SIDE_MAX_MB"
SIDE_BY_SIDE_MAX_MB = 12.0
# nvcc invocations that do more than (or other than) compile: plain nvcc does those
PASS_THROUGH_FLAGS = {
    "-E", "--preprocess", "-M", "--generate-dependencies", "-MM", "--generate-nonsystem-dependencies",
    "-MMD", "--generate-nonsystem-dependencies-with-compile", "-MP", "--generate-dependency-targets",
    "-MT", "--dependency-target-name", "-dryrun", "--dryrun", "-v", "--verbose", "-keep", "--keep",
    "-keep-dir", "--keep-dir", "-save-temps", "--save-temps", "-time", "--time", "-fdevice-time-trace",
    "--fdevice-time-trace", "-optf", "--options-file", "-run", "--run", "-h", "--help", "-V", "--version",
}
# options whose next argument goes to a tool (`-Xptxas -v`), not to nvcc
TOOL_OPTIONS = {"-Xptxas", "--ptxas-options", "-Xcompiler", "--compiler-options", "-Xcudafe", "-Xlinker",
                "--linker-options", "-Xnvlink", "--nvlink-options", "-Xfatbin", "--fatbin-options", "-Xarchive",
                "--archive-options"}
ENV_LINE = re.compile(r"#\$ ([A-Za-z_][A-Za-z0-9_]*)=(.*)")
DEPENDENCY_LINE = re.compile(r"#\$ -- Filter Dependencies -- > (\S+)\s*")
VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
LINE_MARKER = re.compile(rb'^# \d+ "(.*)"(?: \d+)*$', re.M)  # gcc's: # LINE "FILE" FLAGS
DEVICE_TOOLS = ("cicc", "ptxas", "fatbinary")


class Unhandled(Exception):
    """Something this front does not do: the real nvcc does the whole compile."""


class StepFailed(Unhandled):
    """A step of the compile failed (the source's fault, most likely): its output and exit status."""

    def __init__(self, tool: str, stdout: str, stderr: str, returncode: int):
        super().__init__(f"{tool} failed")
        self.stdout, self.stderr, self.returncode = stdout, stderr, returncode


@dataclass
class Step:
    kind: str  # host-preprocess, cudafe, device-preprocess, device, remove, final, dependencies
    argv: list[str] = field(default_factory=list)
    depfile: str = ""  # for "dependencies": the file nvcc writes


@dataclass
class Plan:
    host: list[Step]
    device: list[Step]
    final: Step
    module_ids: list[tuple[str, str]]  # (the file one side writes, the other side's own)
    dependencies: list[tuple[str, list[str]]]  # (the -MD file, the preprocessed files it lists)


def nvcc_flags(args: list[str]) -> set[str]:
    """The names of nvcc's own options among `args` (less what -Xptxas and the like pass on)."""
    names, skip = set(), False
    for arg in args:
        if not skip:
            names.add(arg.split("=", 1)[0])
        skip = not skip and arg in TOOL_OPTIONS
    return names


def check_invocation(args: list[str]) -> None:
    """A plain compile (-c) with no flag that makes nvcc do more than its steps."""
    flags = nvcc_flags(shlex.split(os.environ.get("NVCC_PREPEND_FLAGS", "")) + args
                       + shlex.split(os.environ.get("NVCC_APPEND_FLAGS", "")))
    if "-c" not in flags and "--compile" not in flags:
        raise Unhandled("not a -c compile")
    passed = sorted(flags & PASS_THROUGH_FLAGS)
    if passed:
        raise Unhandled(f"{' '.join(passed)} is nvcc's to do")


def dryrun(nvcc: str, args: list[str], workdir: str) -> str:
    """nvcc's step lines for this compile, its temporary files placed in `workdir`."""
    done = subprocess.run([nvcc, *args, "--dryrun"], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": workdir})
    if done.returncode != 0:
        raise Unhandled("nvcc --dryrun failed")
    return done.stdout + done.stderr


def expand(token: str, env: dict[str, str]) -> str:
    """$NAME and ${NAME} from nvcc's own variables (as its shell would); any other $ is a surprise."""
    expanded = VARIABLE.sub(lambda m: env[m.group(1) or m.group(2)] if (m.group(1) or m.group(2)) in env
                            else m.group(0), token)
    if "$" in expanded or "`" in expanded:
        raise Unhandled(f"cannot expand {token!r}")
    return expanded


def classify(argv: list[str]) -> str:
    tool = os.path.basename(argv[0])
    if tool == "cudafe++":
        return "cudafe"
    if tool in DEVICE_TOOLS:
        return "device"
    if tool == "rm":
        return "remove"
    if "-E" in argv:
        return "device-preprocess" if any(a.startswith("-D__CUDA_ARCH__=") for a in argv) else "host-preprocess"
    if "-c" in argv:
        return "final"
    raise Unhandled(f"unknown step {tool}")


def parse_steps(text: str) -> tuple[dict[str, str], list[Step], list[str]]:
    """nvcc's variables (`#$ NAME=value`, set as they are: nvcc's own steps see them so), its steps in
    order, and what else it printed (warnings: printed as nvcc would)."""
    env: dict[str, str] = {}
    steps: list[Step] = []
    other: list[str] = []
    for line in text.splitlines():
        if not line.startswith("#$ "):
            if line.strip():
                other.append(line)
            continue
        variable, dependencies = ENV_LINE.fullmatch(line), DEPENDENCY_LINE.fullmatch(line)
        if variable and not steps:
            env[variable.group(1)] = variable.group(2)
        elif dependencies:
            steps.append(Step("dependencies", depfile=dependencies.group(1)))
        elif variable:
            raise Unhandled("a variable set between steps")
        else:
            tokens = shlex.split(line[3:])
            if not tokens or any(t in ("|", ">", "<", ";", "&", "&&", "||") for t in tokens):
                raise Unhandled(f"a shell step: {line}")
            argv = [expand(t, env) for t in tokens]
            steps.append(Step(classify(argv), argv))
    return env, steps, other


def module_id_file(step: Step) -> str | None:
    argv = step.argv
    return argv[argv.index("--module_id_file_name") + 1] if "--module_id_file_name" in argv[:-1] else None


def own_module_id(step: Step, suffix: str) -> str:
    """Make `step`, which reads the module id file, write its own instead; returns that file."""
    at = step.argv.index("--module_id_file_name")
    own = step.argv[at + 1] + suffix
    step.argv[at:at + 2] = ["--gen_module_id_file", "--module_id_file_name", own]
    return own


def temp_files(steps: list[Step], workdir: str) -> set[str]:
    return {arg for step in steps for arg in step.argv if arg.startswith(workdir + os.sep)}


def make_plan(steps: list[Step], workdir: str) -> Plan:
    """Split nvcc's steps into the host side, the device side and the final compile, checking that the
    two sides share no file but the module id."""
    if not steps or steps[-1].kind != "final" or sum(s.kind == "final" for s in steps) != 1:
        raise Unhandled("not one final compile, last")
    host: list[Step] = []
    device: list[Step] = []
    dependencies: list[tuple[str, list[str]]] = []
    for index, step in enumerate(steps[:-1]):
        if step.kind == "dependencies":
            preprocessed = [output_of(s) for s in steps[:index] if s.kind.endswith("preprocess")]
            if not preprocessed:
                raise Unhandled("dependencies before any preprocessing")
            dependencies.append((step.depfile, preprocessed))
            continue
        if step.kind == "remove" and (index == 0 or steps[index - 1].kind != "device"):
            raise Unhandled("a removal after something else than a device step")
        (host if step.kind in ("host-preprocess", "cudafe") else device).append(step)
    if not any(s.kind == "cudafe" for s in host) or not any(s.kind == "device" for s in device):
        raise Unhandled("no cudafe++ or no device step")
    generated = {module_id_file(s) for s in host + device if "--gen_module_id_file" in s.argv} - {None}
    shared = temp_files(host, workdir) & temp_files(device, workdir)
    if shared - generated or len(generated) > 1:
        raise Unhandled(f"the host and device steps share {sorted(shared)}")
    module_ids = []
    for number, step in enumerate(host + device):
        file = module_id_file(step)
        reader = file in shared and "--gen_module_id_file" not in step.argv
        if reader:
            own = own_module_id(step, f".{number}")
            module_ids.append((file, own))
    return Plan(host, device, steps[-1], module_ids, dependencies)


def write_dependencies(depfile: str, preprocessed: list[str], target: str) -> None:
    """nvcc's -MD file: the object, then each file the line markers of the preprocessed files (each
    device architecture's and the host's, in nvcc's order) name, once, in the order they first appear
    (not <built-in> and the like)."""
    names: list[bytes] = []
    for path in preprocessed:
        with open(path, "rb") as f:
            names += LINE_MARKER.findall(f.read())
    files = list(dict.fromkeys(n.decode() for n in names if not n.startswith(b"<")))
    if any(re.search(r"[\s\\#$\"]", name) for name in [target, *files]):
        raise Unhandled("a file name with a character make or gcc would escape")
    with open(depfile, "w") as f:
        f.write(f"{target} : " + " \\\n    ".join(files) + "\n")


def remove(step: Step) -> None:
    """nvcc's `rm FILE`: a file the step before may not have written (fatbinary's --embedded-fatbin)."""
    if any(arg.startswith("-") for arg in step.argv[1:]):
        raise Unhandled(f"rm with flags: {step.argv}")
    for path in step.argv[1:]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def output_of(step: Step) -> str:
    argv = step.argv
    if "-o" not in argv[:-1]:
        raise Unhandled(f"no -o in {argv[0]}")
    return argv[argv.index("-o") + 1]


class Runner:
    """Runs the steps of each side in order, the sides at once; the first failure stops both."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.failed = threading.Event()
        self.surprise: Unhandled | None = None  # a failure of this front's own, not of a step
        self.running: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.outputs: dict[int, tuple[str, str]] = {}
        self.first_failure: StepFailed | None = None
        self.began = time.monotonic()

    def run_sides(self, *sides: list[Step]) -> bool:
        threads = [threading.Thread(target=self.run_side, args=(side,)) for side in sides]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return not self.failed.is_set()

    def run_side(self, steps: list[Step]) -> None:
        for step in steps:
            if not self.run_one(step):
                self.stop()
                return

    def run_one(self, step: Step) -> bool:
        started = time.monotonic()
        try:
            ok = self.execute(step)
        except Exception as exc:  # noqa: BLE001  (any surprise: nvcc does the compile)
            self.surprise, ok = exc if isinstance(exc, Unhandled) else Unhandled(repr(exc)), False
        if os.environ.get(TRACE_ENV) == "1":
            failure = "" if ok else f" failed {self.outputs.get(id(step), ('', ''))[1][-2000:]}"
            print(f"[nvcc_parallel] {os.path.basename(step.argv[0])} +{started - self.began:.2f} s, "
                  f"{time.monotonic() - started:.2f} s{failure}", file=sys.stderr, flush=True)
        return ok

    def execute(self, step: Step) -> bool:
        if step.kind == "remove":
            remove(step)
            return True
        with self.lock:
            if self.failed.is_set():
                return False
            process = subprocess.Popen(step.argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, errors="replace")
            self.running.add(process)
        out, err = process.communicate()
        with self.lock:
            self.running.discard(process)
            if process.returncode != 0 and not self.failed.is_set() and self.first_failure is None:
                self.first_failure = StepFailed(os.path.basename(step.argv[0]), out, err, process.returncode)
        self.outputs[id(step)] = (out, err)
        return process.returncode == 0

    def stop(self) -> None:
        with self.lock:
            self.failed.set()
            for process in self.running:
                process.kill()


def same_module_ids(pairs: list[tuple[str, str]]) -> bool:
    def read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    return all(read(generated) == read(own) for generated, own in pairs)


def leading_preprocessing(steps: list[Step]) -> int:
    """How many of `steps` are preprocessing at their start."""
    return next((i for i, step in enumerate(steps) if not step.kind.endswith("preprocess")), len(steps))


def side_by_side(preprocessed: list[str]) -> bool:
    """Whether the front ends may run at once (see SIDE_BY_SIDE_MAX_MB)."""
    limit_mb = float(os.environ.get(SIDE_BY_SIDE_MAX_MB_ENV) or SIDE_BY_SIDE_MAX_MB)
    largest_mb = max(os.path.getsize(path) for path in preprocessed) / 1e6
    if os.environ.get(TRACE_ENV) == "1":
        print(f"[nvcc_parallel] {largest_mb:.1f} MB preprocessed: front ends "
              f"{'side by side' if largest_mb <= limit_mb else 'one after the other'}", file=sys.stderr, flush=True)
    return largest_mb <= limit_mb


def run_sides(runner: Runner, plan: Plan) -> bool:
    """The preprocessing of both sides at once (little memory), then the rest of each side: at once
    where the preprocessed size allows, else the host side, then the device side."""
    host_at, device_at = leading_preprocessing(plan.host), leading_preprocessing(plan.device)
    if not runner.run_sides(plan.host[:host_at], plan.device[:device_at]):
        return False
    preprocessed = [output_of(step) for step in plan.host[:host_at] + plan.device[:device_at]]
    if not preprocessed or side_by_side(preprocessed):
        return runner.run_sides(plan.host[host_at:], plan.device[device_at:])
    return runner.run_sides(plan.host[host_at:]) and runner.run_sides(plan.device[device_at:])


def compile_in_parallel(nvcc: str, args: list[str], workdir: str) -> None:
    """The whole compile through nvcc's steps; raises Unhandled where the real nvcc must do it."""
    env_lines, steps, printed = parse_steps(dryrun(nvcc, args, workdir))
    plan = make_plan(steps, workdir)
    runner = Runner({**os.environ, **env_lines, "TMPDIR": workdir})
    if not run_sides(runner, plan):
        raise runner.surprise or runner.first_failure or Unhandled("a step failed")
    if not same_module_ids(plan.module_ids):
        raise Unhandled("the two sides' module ids differ")
    for depfile, preprocessed in plan.dependencies:
        write_dependencies(depfile, preprocessed, output_of(plan.final))
    if not runner.run_one(plan.final):
        raise runner.surprise or runner.first_failure or Unhandled("the final compile failed")
    for line in printed:
        print(line, file=sys.stderr)
    for step in steps:
        out, err = runner.outputs.get(id(step), ("", ""))
        sys.stdout.write(out)
        sys.stderr.write(err)


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: nvcc_parallel.py REAL_NVCC ARGS...")
    nvcc, args = argv[0], argv[1:]
    try:
        check_invocation(args)
        workdir = tempfile.mkdtemp(prefix="nvcc-parallel-")
        try:
            compile_in_parallel(nvcc, args, workdir)
            sys.exit(0)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    except StepFailed as failed:
        if os.environ.get(RETRIED_ENV) == "1":
            sys.stdout.write(failed.stdout)
            sys.stderr.write(failed.stderr)
            sys.exit(failed.returncode if failed.returncode > 0 else 1)
        if os.environ.get(TRACE_ENV) == "1":
            print(f"[nvcc_parallel] plain nvcc: {failed}", file=sys.stderr, flush=True)
    except Exception as exc:  # noqa: BLE001  (whatever went wrong, nvcc itself compiles)
        if os.environ.get(TRACE_ENV) == "1":
            print(f"[nvcc_parallel] plain nvcc: {exc}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(nvcc, [nvcc, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
