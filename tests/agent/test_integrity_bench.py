"""The integrity bench's own logic on CPU (the GPU run is bench/judge/integrity.py): its bundles are all
there, the outcome rules tell a right result from a wrong one, and the ncu truth's targets load the
judge's build instead of building again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.judge import integrity_cases  # noqa: E402
from bench.judge.integrity_cases import CASES, judge_outcome  # noqa: E402

CASE = {case.bundle: case for case in CASES}


def test_every_case_is_a_bundle_and_the_script_lists_them():
    for case in CASES:
        folder = case.path
        assert folder.is_relative_to(REPO) and (folder / "torchcode.py").is_file() and (folder / "cudacode.py").is_file(), case.bundle
    help_text = subprocess.run([sys.executable, "bench/judge/integrity.py", "--help"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout
    assert "--only" in help_text and "--deadline" in help_text


def test_cpu_selection_leaves_out_what_needs_a_gpu_and_refuses_unknown_names():
    chosen, skipped = integrity_cases.select(None, "cpu")
    assert "adv-ptr-memo" in [c.bundle for c in chosen]
    assert "adv-legacy-stream (needs CUDA)" in skipped
    with pytest.raises(SystemExit, match="unknown bundle"):
        integrity_cases.select(["adv-nonesuch"], "cuda")


def _passed(flags=(), **timing):
    return {"status": "passed", "flags": list(flags), "timing": timing}


def test_honest_bundle_with_a_false_alarm_is_unexpected():
    assert judge_outcome(CASE["lb-mlp-gelu"].expected, [_passed(["no_custom_kernel"])]) == (True, [])
    ok, misses = judge_outcome(CASE["lb-mlp-gelu"].expected, [_passed(["timing_unconfirmed"])])
    assert not ok and misses == ["false alarm timing_unconfirmed"]


def test_a_wrong_answer_needs_its_reason():
    outcome = CASE["adv-ptr-memo"].expected
    assert judge_outcome(outcome, [{"status": "wrong_answer", "flags": [], "reason": "trial 1: ..."}])[0]
    assert judge_outcome(outcome, [{"status": "wrong_answer", "flags": []}]) == (False, ["no reason"])
    assert judge_outcome(outcome, [_passed()]) == (False, ["status passed"])


def test_an_unjoined_side_stream_must_be_a_wrong_answer_that_says_why():
    outcome = CASE["adv-side-stream"].expected
    assert not judge_outcome(outcome, [_passed()])[0]
    assert not judge_outcome(outcome, [_passed(["unsynchronized_work"])])[0]
    assert not judge_outcome(outcome, [{"status": "wrong_answer", "flags": [], "reason": "trial 0: output 0: NaN"}])[0]
    assert judge_outcome(outcome, [{"status": "wrong_answer", "flags": [], "reason": (
        "trial 0: its output was still being written after the call returned: work on a stream ...")}])[0]


def test_early_side_stream_is_right_flagged_or_reported_at_least_its_record():
    outcome = CASE["adv-side-stream-nowait"].expected
    assert not judge_outcome(outcome, [_passed(confirmation={"ratio": 0.4})])[0]
    assert judge_outcome(outcome, [_passed(["timing_unconfirmed"], confirmation={"ratio": 0.4})])[0]
    assert judge_outcome(outcome, [_passed(confirmation={"ratio": 1.01})])[0]


def test_the_empty_graphs_batched_figure_is_refused():
    outcome = CASE["adv-legacy-stream"].expected
    empty = _passed(candidate={"batched_ms": 3.8e-5, "median_ms": 0.047}, confirmation={"kernel_ms": 0.045})
    real = _passed(candidate={"batched_ms": 0.052, "median_ms": 0.047}, confirmation={"kernel_ms": 0.045})
    assert not judge_outcome(outcome, [empty])[0]
    assert judge_outcome(outcome, [real])[0]
    assert judge_outcome(outcome, [_passed(candidate={"batched_ms": None, "median_ms": 0.047})])[0]


def test_failing_build_must_come_from_the_cache_the_second_time():
    outcome = CASE["adv-compile-error"].expected
    judged = lambda first, second: [  # noqa: E731
        {"status": "compile_error", "flags": [], "reason": "building failed", "durations_s": {"compile": first}},
        {"status": "compile_error", "flags": [], "reason": "building failed", "durations_s": {"compile": second}}]
    assert judge_outcome(outcome, judged(21.0, 0.0))[0]
    assert judge_outcome(outcome, judged(21.0, 19.5)) == (False, ["compile s: 21.0 then 19.5"])


def test_memory_limit_must_name_its_phase():
    outcome = CASE["adv-import-memory"].expected
    named = {"status": "memory_limit", "flags": [], "logs": {"stderr": (
        "[profiler_agent] memory limit 4 GiB exceeded while importing the candidate (build phase): 4.1 GiB")}}
    bare = {"status": "memory_limit", "flags": [], "logs": {"stderr": "[profiler_agent] memory limit 4 GiB hit"}}
    assert judge_outcome(outcome, [named])[0]
    assert not judge_outcome(outcome, [bare])[0]


EXTENSION = textwrap.dedent("""
    from torch.utils.cpp_extension import load_inline
    ext = load_inline(name="bench_prebuilt_probe", cpp_sources="int probe_value() { return 42; }",
                      functions=["probe_value"], extra_cflags=FLAGS, verbose=False)
    print("value", ext.probe_value())
""")


def test_truth_targets_load_the_judges_build_even_when_their_flags_differ(tmp_path, precompiled_header):
    """The judged build may carry the harness's flags; a target importing it with other flags must not
    rebuild (ninja would, in the judge's folder), it imports the .so that is there."""
    cache = Path(os.environ.get("PROFILER_AGENT_CACHE_DIR") or tmp_path) / "bench-prebuilt-probe"
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(cache)}
    # built as a judged process builds, with the harness's header flags (the run's header: tests/conftest.py)
    judged = f"from profiler_agent.executors import pch; pch.install({str(precompiled_header)!r})\nFLAGS = ['-O3']"
    subprocess.run([sys.executable, "-c", judged + EXTENSION], cwd=REPO, env=env, check=True, capture_output=True)
    built = cache / "bench_prebuilt_probe" / "bench_prebuilt_probe.so"
    before = built.stat().st_mtime_ns
    shim = "import sys; sys.path.insert(0, 'bench/judge'); import launch_bound; launch_bound.use_prebuilt_extensions()\n"
    done = subprocess.run([sys.executable, "-c", shim + "FLAGS = ['-O0', '-DOTHER_FLAGS']" + EXTENSION], cwd=REPO,
                          env={**env, "BENCH_PREBUILT_EXTENSIONS": "1"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "value 42" in done.stdout and "building" not in done.stderr
    assert built.stat().st_mtime_ns == before
