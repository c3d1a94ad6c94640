"""The bundle's self-test (run_code.py), run as `python -m profiler_agent.graders.self_test SCRIPT`.

A plain `python run_code.py` builds the candidate without the agent's precompiled header (which
changes the build's flags, so torch sees another build and compiles it again: 20 s on the H100 for
examples/001-example) and with torch's full CUDA header. Here both are installed as in the judged
process (graders.judged_process) before the script runs as __main__, so its import of the candidate finds the
build the judging made. Informative only: nothing it prints is scored.
"""

import os
import runpy
import sys


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m profiler_agent.graders.self_test SCRIPT")
    script = os.path.abspath(args[0])
    from profiler_agent.executors import build_tools

    build_tools.install()
    sys.argv = [args[0]]
    sys.path.insert(0, os.path.dirname(script))  # as `python SCRIPT` does
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
