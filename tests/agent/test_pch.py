"""The agent's precompiled torch/extension.h (profiler_agent.executors.pch), with real g++ builds: prepared
once for a set of flags, then used by a judged build with exactly those flags, and by no other. The header
is the run's (tests/conftest.py's precompiled_header, made by pch.prepare as `prepare-pch` makes it)."""

import shutil

import pytest

from profiler_agent.executors import build_cache, pch
from tests.agent.conftest import EXAMPLES
from tests.conftest import share_precompiled_header

FAST = ("--timing-budget", "0.2")


@pytest.fixture(scope="module", name="build_cache")
def module_build_cache(tmp_path_factory, precompiled_header):
    """A build cache of this module's own (the judge's --cache-dir here), with the run's header."""
    return share_precompiled_header(tmp_path_factory.mktemp("pch-builds"), precompiled_header)


def test_a_judged_build_uses_the_header_prepared_for_its_flags(make_bundle, judge, request):
    root = build_cache.pch_root(request.getfixturevalue("build_cache"))  # the judge's --cache-dir
    folder = pch.prepare(root, ["-O3"], with_cuda=False)  # relu-cpu passes extra_cflags=["-O3"]; the run's
    assert (folder / "torch" / "extension.h.gch").stat().st_size > 1 << 20
    assert (folder / "torch" / "extension.h").resolve() == pch._header().resolve()
    assert pch.prepare(root, ["-O3"], with_cuda=False) == folder  # prepared once
    assert pch.include_flags(root, ["-O3"], False) == [f"-I{folder}", "-Winvalid-pch"]
    assert pch.include_flags(root, ["-O1"], False) == []  # none for other flags
    assert pch.include_flags(None, ["-O3"], False) == []

    source = (EXAMPLES / "relu-cpu" / "cudacode.py").read_text().replace('name="relu"', 'name="relu_pch"')
    self_test = "from cudacode import ModelNew\nprint('self-test imported', ModelNew.__name__)\n"
    result = judge(make_bundle(source, **{"run_code.py": self_test}), *FAST).result
    assert result["status"] == "passed", result["logs"]["stderr"][-2000:]
    log = result["logs"]["compile"]
    assert f"-I{folder}" in log  # ninja's command line (verbose=True)
    assert "not used because" not in log and "-Winvalid-pch" in log  # GCC took it
    # the self-test imports the candidate with the judged build's flags: found, not built again
    output = result["self_test"]["output"]
    assert result["self_test"]["exit_code"] == 0 and "self-test imported ModelNew" in output, output
    assert "-MMD" not in output and "[1/" not in output, output  # ninja ran no compile (verbose=True)


def test_the_pch_folder_is_the_build_caches(tmp_path):
    assert build_cache.pch_root(tmp_path) == tmp_path / "pch"
    assert shutil.which("c++")


def test_a_header_folder_the_judged_process_may_not_read_is_no_header(tmp_path, monkeypatch):
    # seen on the H100: the sandbox's user could not search the agent's folder above it (PermissionError
    # in the judged build, a runtime_error for the candidate); the build goes on without the header
    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(pch.Path, "is_dir", denied)
    assert pch.include_flags(tmp_path / "pch", ["-O3"], False) == []
