"""What every process that imports a candidate installs first: the judged process, its self-test and
the profiled process (ncu's target) must write the same build.ninja (flags, headers, nvcc), or each
one compiles the candidate again (20 s and more on the H100)."""

import os

from profiler_agent.executors import build_failures, nvcc_front_install, pch, slim_header


def install() -> None:
    build_failures.install()  # first, innermost: a build the compiler refused is not compiled again
    pch.install(os.environ.get(pch.PCH_DIR_ENV))  # the agent's precompiled torch/extension.h, where one fits
    slim_header.install()  # CUDA files read narrow torch headers where they can (cold compile)
    nvcc_front_install.install()  # nvcc's host and device steps side by side (cold compile)
