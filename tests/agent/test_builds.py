"""Builds end to end with real load_inline compiles: a failed build is kept under its build key and
reported again without compiling; a build started from __init__ or forward is compile time (the
compile limits, durations_s.compile, the compile log)."""

import time

import pytest

from profiler_agent.executors import build_cache
from tests.agent.conftest import SMALL_RELU_ROWS

FAST = ("--timing-budget", "0.2")


@pytest.fixture
def relu_rows():
    """What these tests assert does not depend on the inputs' size: the small ReLU reference."""
    return SMALL_RELU_ROWS


@pytest.fixture
def build_cache_dir(build_cache):
    return build_cache  # the session's cache (the fixture's name is this module's name)

BROKEN = '''
    import torch
    from torch.utils.cpp_extension import load_inline

    relu = load_inline(name="broken_relu", cpp_sources="""
    at::Tensor relu_forward(const at::Tensor& x) { return x.clamp_min(0) }  // the ';' is missing
    """, functions=["relu_forward"], extra_cflags=["-O3"], verbose=True)  # -O3: the run's header

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return relu.relu_forward(x)
'''


def test_a_failed_build_is_reported_again_from_the_cache_without_compiling(make_bundle, judge, build_cache_dir):
    bundle = make_bundle(BROKEN)
    first = judge(bundle, *FAST).result
    assert first["status"] == "compile_error", first["logs"]["stderr"][-2000:]
    assert "error: expected" in first["logs"]["compile"]
    assert "from the build cache" not in first["logs"]["compile"]

    started = time.monotonic()
    second = judge(bundle, *FAST).result
    assert second["status"] == "compile_error"
    assert "error: expected" in second["logs"]["compile"]  # the stored log
    assert "[profiler_agent] this compile error comes from the build cache" in second["logs"]["compile"]
    assert second["durations_s"]["compile"] == 0.0 and time.monotonic() - started < 10

    fixed = make_bundle(BROKEN.replace("clamp_min(0) }", "clamp_min(0); }"), name="fixed")
    assert build_cache.cached_failure(build_cache_dir, build_cache.build_key(fixed / "cudacode.py", "cpu")) is None


FALLS_BACK = '''
    import torch
    from torch.utils.cpp_extension import load_inline

    try:  # its own extension does not build: it falls back to torch (and still passes)
        relu = load_inline(name="refused_relu", cpp_sources="""
        at::Tensor relu_forward(const at::Tensor& x) { return x.clamp_min(0) }  // the ';' is missing
        """, functions=["relu_forward"], extra_cflags=["-O3"], verbose=True).relu_forward
    except RuntimeError:
        relu = torch.relu

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return relu(x)
'''
REFUSED_AGAIN = "this build was refused by the compiler before (same sources, flags and toolchain); not compiled again"


def test_a_build_the_compiler_refused_is_not_compiled_again_when_the_candidate_falls_back(make_bundle, judge):
    """The judging passes (the candidate falls back to torch); the refused build is compiled by the
    first judging only, each later one is told the refusal at once."""
    bundle = make_bundle(FALLS_BACK)
    first = judge(bundle, *FAST).result
    assert first["status"] == "passed", first["logs"]["stderr"][-2000:]
    assert "error: expected" in first["logs"]["compile"] + first["logs"]["stderr"]
    assert REFUSED_AGAIN not in first["logs"]["compile"]
    second = judge(bundle, *FAST).result
    assert second["status"] == "passed", second["logs"]["stderr"][-2000:]
    assert REFUSED_AGAIN in second["logs"]["compile"]
    assert "error: expected" not in second["logs"]["compile"]  # nothing compiled, so no compiler output
    assert second["durations_s"]["compile"] < first["durations_s"]["compile"]


def test_only_the_compilers_refusal_is_kept(tmp_path, monkeypatch):
    """A build the host failed (a killed compiler) is compiled again; so is one with other flags."""
    from profiler_agent.executors import build_failures

    calls = []

    def compile_function(name, sources, extra_cflags, build_directory, verbose=False):
        calls.append(list(extra_cflags))
        raise RuntimeError(f"Error building extension '{name}': {extra_cflags[0]}")

    source = tmp_path / "main.cpp"
    source.write_text("int main() {}")
    kept = build_failures.with_refusals_kept(compile_function)
    for flags in (["error: expected ';'"], ["error: expected ';'"], ["g++: fatal error: Killed signal terminated program"],
                  ["g++: fatal error: Killed signal terminated program"], ["-O2 error"]):
        with pytest.raises(RuntimeError, match="Error building extension"):
            kept("m", [str(source)], flags, str(tmp_path / "build"))
    assert calls == [["error: expected ';'"], ["g++: fatal error: Killed signal terminated program"],
                     ["g++: fatal error: Killed signal terminated program"], ["-O2 error"]]
    source.write_text("int main() { return 0; }")  # other sources: another build
    with pytest.raises(RuntimeError):
        kept("m", [str(source)], ["error: expected ';'"], str(tmp_path / "build"))
    assert len(calls) == 5


SLOW_BUILD = '''
    import time, torch

    time.sleep(600)  # a build that never ends

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''


def test_a_build_that_timed_out_is_not_kept(make_bundle, judge, build_cache_dir):
    bundle = make_bundle(SLOW_BUILD)
    result = judge(bundle, "--compile-timeout", "2", *FAST).result
    assert result["status"] == "compile_error"
    assert "not kept in the build cache: the build was killed or timed out" in result["logs"]["compile"]
    assert build_cache.cached_failure(build_cache_dir, build_cache.build_key(bundle / "cudacode.py", "cpu")) is None
    again = judge(bundle, "--compile-timeout", "2", *FAST).result
    assert "from the build cache" not in again["logs"]["compile"] and again["durations_s"]["compile"] >= 2


def test_a_killed_or_starved_compiler_is_not_the_codes_fault():
    error = {"origin": "submission", "stage": "load_candidate", "message": "Error building extension 'relu'"}
    killed_log = "c++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n"
    assert build_cache.build_failed_by_the_code(error, killed_log, ended_normally=True)[0] is False
    assert build_cache.build_failed_by_the_code(error, "error: expected ';'", ended_normally=False)[0] is False
    assert build_cache.build_failed_by_the_code(error, "error: expected ';'", ended_normally=True)[0] is True
    runtime = {**error, "message": "ModuleNotFoundError: No module named 'ninja'"}
    assert build_cache.build_failed_by_the_code(runtime, "", ended_normally=True)[0] is False


LAZY_BUILD = '''
    import torch
    from torch.utils.cpp_extension import load_inline

    SOURCE = """
    at::Tensor relu_forward(const at::Tensor& x) {{  // {tag}
        at::Tensor y = at::empty_like(x);
        const float* src = x.data_ptr<float>();
        float* dst = y.data_ptr<float>();
        for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] > 0.f ? src[i] : 0.f;
        return y;
    }}
    """

    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ext = {in_init}

        def forward(self, x):
            if self.ext is None:
                # -O3: the run's precompiled header (tests/conftest.py), a build of seconds still
                self.ext = load_inline(name="lazy_relu", cpp_sources=SOURCE, functions=["relu_forward"],
                                       extra_cflags=["-O3"], verbose=True)
            return self.ext.relu_forward(x)
'''


def test_a_build_in_forward_is_compile_time_with_its_log(make_bundle, judge):
    bundle = make_bundle(LAZY_BUILD.format(tag="forward", in_init="None"))
    result = judge(bundle, *FAST).result
    assert result["status"] == "passed", result["logs"]["stderr"][-2000:]
    durations = result["durations_s"]
    # the build (seconds of g++) is compile time; the trials' time is the calls' alone
    assert durations["compile"] > 3 and durations["correctness"] < durations["compile"]
    assert "a build started after the import (#1): counted as compile time" in result["logs"]["compile"]
    assert "lazy_relu" in result["logs"]["compile"]  # ninja's output went to the compile log
    assert "no_custom_kernel" not in result["flags"]


def test_a_build_in_init_is_under_the_compile_limit(make_bundle, judge):
    # no -O3: without the run's precompiled header, a build of some 20 s that the 8 s limit stops
    source = LAZY_BUILD.format(tag="init", in_init='load_inline(name="lazy_relu", cpp_sources=SOURCE, functions=["relu_forward"], verbose=True)')
    result = judge(make_bundle(source), "--compile-timeout", "8", "--run-timeout", "600", *FAST).result
    assert result["status"] == "compile_error", result["logs"]["stderr"][-2000:]
    assert "compile timed out after 8 s" in result["logs"]["stderr"]  # the import (torch's) spent part of it
    assert "a build started after the import (#1)" in result["logs"]["compile"]
