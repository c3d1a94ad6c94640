"""CUDA files build with the slim torch/extension.h first, and with the full one when that fails; the
slim folder travels in NVCC_PREPEND_FLAGS, never in the build's own flags (which name the build)."""
import os

from profiler_agent.bundles import slim_header


def recording_compile(fail_with_slim):
    calls = []

    def compile_function(name, sources, extra_cflags, extra_cuda_cflags, *args, **kwargs):
        prepended = os.environ.get(slim_header.PREPEND_ENV, "")
        calls.append((list(extra_cuda_cflags or []), prepended))
        if fail_with_slim and "-I" in prepended:
            raise RuntimeError("Error building extension 'x'")
        return "module"

    return compile_function, calls


def test_the_header_holds_torch_types_alone(tmp_path):
    folder = slim_header.slim_include_folder(tmp_path)
    text = (folder / "torch" / "extension.h").read_text()
    assert "#include <torch/types.h>" in text and "torch/all.h" not in text


def test_cuda_sources_get_the_slim_folder_through_nvccs_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(slim_header.PREPEND_ENV, "-lineinfo")
    compile_function, calls = recording_compile(fail_with_slim=False)
    wrapped = slim_header.with_slim_header(compile_function, tmp_path)
    assert wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"]) == "module"
    assert calls == [(["-O3"], f"-I{tmp_path} -lineinfo")]  # the build's flags untouched
    assert os.environ[slim_header.PREPEND_ENV] == "-lineinfo"  # restored


def test_a_slim_failure_builds_again_with_the_full_header(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(slim_header.PREPEND_ENV, raising=False)
    compile_function, calls = recording_compile(fail_with_slim=True)
    wrapped = slim_header.with_slim_header(compile_function, tmp_path)
    assert wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"]) == "module"
    assert calls == [(["-O3"], f"-I{tmp_path}"), (["-O3"], "")]
    assert "building again with the full header" in capsys.readouterr().err
    assert slim_header.PREPEND_ENV not in os.environ


def test_cpp_only_builds_are_untouched(tmp_path, monkeypatch):
    monkeypatch.delenv(slim_header.PREPEND_ENV, raising=False)
    compile_function, calls = recording_compile(fail_with_slim=True)
    slim_header.with_slim_header(compile_function, tmp_path)("ext", ["main.cpp"], ["-O3"], None)
    assert calls == [([], "")]


def test_the_folder_is_beside_the_builds_and_never_rewritten(tmp_path, monkeypatch):
    """ninja's dependency files name the header: a new path or mtime would rebuild every judging."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    folder = slim_header.slim_include_folder()
    assert folder == tmp_path / slim_header.FOLDER_NAME
    header = folder / "torch" / "extension.h"
    first = header.stat().st_mtime_ns
    os.utime(header, ns=(first - 10**9, first - 10**9))
    assert slim_header.slim_include_folder() == folder
    assert header.stat().st_mtime_ns == first - 10**9  # the same content is not written again
