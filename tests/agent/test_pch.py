"""The agent's precompiled torch/extension.h (profiler_agent.executors.pch), with real g++ builds: prepared
once for a set of flags, then used by a judged build with exactly those flags, and by no other. The header
is the run's (tests/conftest.py's precompiled_header, made by pch.prepare as `prepare-pch` makes it)."""

import json
import os
import shutil

import pytest

from profiler_agent.executors import build_cache, pch
from tests.agent.conftest import EXAMPLES, REPO
from tests.conftest import share_precompiled_header

FAST = ("--timing-budget", "0.2")


@pytest.fixture(scope="module", name="build_cache")
def module_build_cache(tmp_path_factory, precompiled_header):
    """A build cache of this module's own (the judge's --cache-dir here), with the run's header."""
    return share_precompiled_header(tmp_path_factory.mktemp("pch-builds"), precompiled_header)


def test_a_judged_build_uses_the_header_prepared_for_its_flags(make_bundle, request, tmp_path, capsys, monkeypatch):
    from profiler_agent.__main__ import main

    cache_dir = request.getfixturevalue("build_cache")  # the judge's --cache-dir
    root = build_cache.pch_root(cache_dir)
    folder = pch.prepare(root, ["-O3"], with_cuda=False)  # relu-cpu passes extra_cflags=["-O3"]; the run's
    assert (folder / "torch" / "extension.h.gch").stat().st_size > 1 << 20
    assert (folder / "torch" / "extension.h").resolve() == pch._header().resolve()
    assert pch.prepare(root, ["-O3"], with_cuda=False) == folder  # prepared once
    assert pch.include_flags(root, ["-O3"], False) == ["-Winvalid-pch"]
    assert pch.include_path(root, ["-O3"], False, lean=False) == [folder]
    assert pch.include_flags(root, ["-O1"], False) == [] and pch.include_path(root, ["-O1"], False, False) == []
    assert pch.include_flags(None, ["-O3"], False) == []

    source = (EXAMPLES / "relu-cpu" / "cudacode.py").read_text().replace('name="relu"', 'name="relu_pch"')
    self_test = "from cudacode import ModelNew\nprint('self-test imported', ModelNew.__name__)\n"
    bundle = make_bundle(source, **{"run_code.py": self_test})
    # named relatively, as an operator may: the judged processes run elsewhere, so the judge resolves it
    monkeypatch.chdir(cache_dir.parent)
    main(["judge", str(bundle), "--device", "cpu", "--cache-dir", cache_dir.name, "--json", str(tmp_path / "r.json"),
          *FAST])
    capsys.readouterr()
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["status"] == "passed", result["logs"]["stderr"][-2000:]
    log = result["logs"]["compile"]
    assert f"main.cpp looks for precompiled torch headers in {folder}" in log  # in CPATH, not the flags
    assert f"-I{folder}" not in log and "-Winvalid-pch" in log  # ninja's command line (verbose=True)
    assert "not used because" not in log  # GCC took it
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


LEAN_BINDING = r"""
#ifdef PROFILER_AGENT_LEAN_MAIN
int lean_header() { return 1; }
#else
int lean_header() { return 0; }
#endif
torch::Tensor twice(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
  auto y = x.contiguous().clone();
  float* values = y.data_ptr<float>();
  for (int64_t i = 0; i < y.numel(); ++i) values[i] *= 2;
  return y;
}
std::vector<torch::Tensor> both(torch::Tensor x, std::optional<torch::Tensor> y) {  // pybind11's STL casters
  return {x, y.has_value() ? *y : x};
}
"""

BUILD_WITH_LEAN_MAIN = r"""
import os, sys, torch
from torch.utils.cpp_extension import load_inline
from profiler_agent.executors import pch, slim_header
pch.install(sys.argv[1])
os.environ[slim_header.LEAN_MAIN_ENV] = sys.argv[2]
module = load_inline(name=sys.argv[3], cpp_sources=sys.argv[4], functions=["twice", "lean_header", "both"],
                     extra_cflags=["-O3"], build_directory=sys.argv[5], verbose=True)
print("LEAN", module.lean_header(), "TWICE", module.twice(torch.tensor([1.0, -2.0])).tolist(),
      "BOTH", [t.tolist() for t in module.both(torch.tensor([1.0]), None)])
"""


def test_main_cpp_reads_the_lean_header_only_where_asked_and_gcc_takes_its_pch(precompiled_header, tmp_path):
    """The first tier of a CUDA build asks for the lean header (slim_header.LEAN_MAIN_ENV): a real build
    of a binding that needs only the tensor class, with the lean header's .gch in CPATH before the full one."""
    import subprocess
    import sys

    full = pch.prepare(precompiled_header, ["-O3"], with_cuda=False, lean=True)
    lean = pch.pch_folder(precompiled_header, ["-O3"], False, pch.LEAN)
    assert lean != full and (lean / "torch" / "extension.h.gch").stat().st_size > 1 << 20
    assert "#include <torch/all.h>" not in (lean / "torch" / "extension.h").read_text()
    assert pch.include_path(precompiled_header, ["-O3"], False, lean=True) == [lean, full]
    outputs = {}
    for asked in ("1", "0"):
        build = tmp_path / f"build-{asked}"
        build.mkdir()
        # the lean build names the folder relatively (a relative --cache-dir): ninja compiles in the
        # build's folder, so only an absolute CPATH entry lets it find the lean header there
        root, cwd = (precompiled_header.name, precompiled_header.parent) if asked == "1" else (precompiled_header, None)
        done = subprocess.run([sys.executable, "-c", BUILD_WITH_LEAN_MAIN, str(root), asked,
                               f"lean_main_{asked}", LEAN_BINDING, str(build)],
                              capture_output=True, text=True, timeout=600, cwd=cwd,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        outputs[asked] = done.stdout + done.stderr
        assert done.returncode == 0, outputs[asked][-3000:]
        assert "not used because" not in outputs[asked]  # -Winvalid-pch: GCC took the .gch it found
    assert "LEAN 1 TWICE [2.0, -4.0] BOTH [[1.0], [1.0]]" in outputs["1"]
    assert f"headers in {lean} then {full}" in outputs["1"]
    assert "LEAN 0 TWICE [2.0, -4.0] BOTH [[1.0], [1.0]]" in outputs["0"] and str(lean) not in outputs["0"]
