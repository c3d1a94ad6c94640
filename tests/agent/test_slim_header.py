"""CUDA files build with the sliced torch headers first, then the narrow ones, the slim torch/extension.h
and the full one; the folders travel in NVCC_PREPEND_FLAGS, never in the build's own flags (which name the build)."""
import os
import shutil
import subprocess

import pytest

from profiler_agent.executors import nvcc_front, sliced_header, slim_header


def header_label(prepended: str) -> str:
    """Which headers a build was given, from NVCC_PREPEND_FLAGS."""
    if slim_header.SLICED_FOLDER_NAME in prepended:
        return "sliced"
    if slim_header.NARROW_FOLDER_NAME in prepended:
        return "narrow"
    return "slim" if "-I" in prepended else "full"


def recording_compile(failing=(), retried=None):
    """A compile function that fails with the headers labelled in `failing` (header_label) and records
    each call's CUDA flags and NVCC_PREPEND_FLAGS. retried: a list given the nvcc front's RETRIED_ENV
    at each call."""
    calls, lean_main = [], []

    def compile_function(name, sources, extra_cflags, extra_cuda_cflags, *args, **kwargs):
        prepended = os.environ.get(slim_header.PREPEND_ENV, "")
        calls.append((list(extra_cuda_cflags or []), prepended))
        lean_main.append(os.environ.get(slim_header.LEAN_MAIN_ENV))
        if retried is not None:
            retried.append(os.environ.get(nvcc_front.RETRIED_ENV))
        if header_label(prepended) in failing:
            raise RuntimeError("Error building extension 'x'")
        return "module"

    compile_function.lean_main = lean_main  # pch's lean main.cpp header asked for, at each call
    return compile_function, calls


def narrow_folder_of(prepended: str):
    return prepended.split()[0].removeprefix("-I")


def test_the_header_holds_torch_types_alone(tmp_path):
    folder = slim_header.slim_include_folder(tmp_path)
    text = (folder / "torch" / "extension.h").read_text()
    assert "#include <torch/types.h>" in text and "torch/all.h" not in text


def test_cuda_sources_get_the_sliced_folder_through_nvccs_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(slim_header.PREPEND_ENV, "-lineinfo")
    compile_function, calls = recording_compile()
    wrapped = slim_header.with_slim_header(compile_function, tmp_path / "slim", tmp_path / slim_header.NARROW_FOLDER_NAME,
                                           slim_header.aten_ops_folder())
    assert wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"]) == "module"
    assert len(calls) == 1 and calls[0][0] == ["-O3"]  # the build's flags untouched
    assert calls[0][1].startswith(f"-I{tmp_path / slim_header.SLICED_FOLDER_NAME}/") and calls[0][1].endswith(" -lineinfo")
    assert os.environ[slim_header.PREPEND_ENV] == "-lineinfo"  # restored


def test_each_failure_builds_with_the_next_headers_down_to_the_full_one(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(slim_header.PREPEND_ENV, raising=False)
    compile_function, calls = recording_compile(failing={"sliced", "narrow"})
    wrapped = slim_header.with_slim_header(compile_function, tmp_path / "slim", tmp_path / slim_header.NARROW_FOLDER_NAME,
                                           slim_header.aten_ops_folder())
    assert wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"]) == "module"
    assert [header_label(prepended) for _, prepended in calls] == ["sliced", "narrow", "slim"]
    assert [prepended for _, prepended in calls][2:] == [f"-I{tmp_path / 'slim'}"]
    err = capsys.readouterr().err
    assert "did not build with the sliced torch headers (RuntimeError); building again with the narrow ones" in err
    assert "did not build with the narrow torch headers (RuntimeError); building again with the slim ones" in err

    retried = []
    compile_function, calls = recording_compile(failing={"sliced", "narrow", "slim"}, retried=retried)
    wrapped = slim_header.with_slim_header(compile_function, tmp_path / "slim", tmp_path / slim_header.NARROW_FOLDER_NAME,
                                           slim_header.aten_ops_folder())
    assert wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"]) == "module"
    assert [header_label(prepended) for _, prepended in calls] == ["sliced", "narrow", "slim", "full"]
    assert compile_function.lean_main == ["1", None, None, None]  # main.cpp's lean header: the first try only
    assert "building again with the full ones" in capsys.readouterr().err
    assert slim_header.LEAN_MAIN_ENV not in os.environ
    assert slim_header.PREPEND_ENV not in os.environ
    # the nvcc front skips nvcc's rerun of a failed step where the build is done again, not at the last try
    assert retried == ["1", "1", "1", None] and nvcc_front.RETRIED_ENV not in os.environ


def test_a_torch_whose_headers_cannot_be_sliced_builds_with_the_narrow_ones(tmp_path, capsys, monkeypatch):
    """A torch whose TensorBody.h has another shape: the sliced tier is left out, said once, and the
    build starts with the narrow headers."""
    monkeypatch.delenv(slim_header.PREPEND_ENV, raising=False)
    ops_folder = tmp_path / "include" / "ATen" / "ops"
    shutil.copytree(slim_header.aten_ops_folder().parent / "core", tmp_path / "include" / "ATen" / "core")
    body = ops_folder.parent / "core" / "TensorBody.h"
    body.write_text(body.read_text().replace(sliced_header.DECLARATIONS_START, "// (moved)"))
    ops_folder.mkdir(parents=True)
    (ops_folder.parent / "MethodOperators.h").write_text("")
    compile_function, calls = recording_compile()
    wrapped = slim_header.with_slim_header(compile_function, tmp_path / "slim", tmp_path / slim_header.NARROW_FOLDER_NAME,
                                           ops_folder)
    assert wrapped("ext", ["main.cpp", "cuda.cu"], [], []) == "module"
    assert [header_label(prepended) for _, prepended in calls] == ["narrow"]
    assert compile_function.lean_main == ["1"]  # the first tier there
    assert "no sliced torch headers here (no generated declarations found)" in capsys.readouterr().err


def test_the_narrow_header_declares_the_ops_the_cuda_sources_name(tmp_path):
    source = tmp_path / "cuda.cu"
    source.write_text("auto y = torch::empty_like(x); auto z = at::zeros({4}, x.options()); torch::Tensor t;"
                      " torch::kFloat32; at::not_an_op_anywhere();")
    ops = slim_header.ops_named([tmp_path / "main.cpp", source], slim_header.aten_ops_folder())
    assert ops == ["empty_like", "zeros"]  # Tensor and kFloat32 are no op; unknown names are left out
    folder = slim_header.narrow_include_folder(tmp_path / "narrow", ops)
    types_h = (folder / "torch" / "types.h").read_text()
    assert "#include <ATen/ops/empty_like.h>" in types_h and "#include <ATen/ops/zeros.h>" in types_h
    assert "ATen/ATen.h" not in types_h
    assert slim_header.narrow_include_folder(tmp_path / "narrow", ["empty"]) != folder  # other ops, other folder


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_a_launcher_compiles_against_the_narrow_header_with_torchs_own_headers(tmp_path):
    """A real compile (syntax only, the host side of what nvcc does) of a typical launcher."""
    from torch.utils import cpp_extension

    source = tmp_path / "cuda.cu"
    source.write_text(
        "#include <torch/extension.h>\n"
        "torch::Tensor relu(torch::Tensor x) {\n"
        "  TORCH_CHECK(x.scalar_type() == torch::kFloat32, \"x must be float32\");\n"
        "  auto xc = x.contiguous(); auto y = torch::empty_like(xc);\n"
        "  const float* in = xc.data_ptr<float>(); float* out = y.data_ptr<float>();\n"
        "  for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0 ? in[i] : 0;\n"
        "  return y;\n}\n")
    folder = slim_header.narrow_include_folder(
        tmp_path / "narrow", slim_header.ops_named([source], slim_header.aten_ops_folder()))
    includes = [f"-I{path}" for path in cpp_extension.include_paths()]
    done = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-x", "c++", f"-I{folder}", *includes, str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_cpp_only_builds_are_untouched(tmp_path, monkeypatch):
    monkeypatch.delenv(slim_header.PREPEND_ENV, raising=False)
    compile_function, calls = recording_compile(failing={"sliced", "narrow", "slim"})
    slim_header.with_slim_header(compile_function, tmp_path)("ext", ["main.cpp"], ["-O3"], None)
    assert calls == [([], "")] and compile_function.lean_main == [None]  # main.cpp may hold the kernels


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


def test_each_retry_really_builds_again_as_torch_records_builds(tmp_path, monkeypatch):
    """torch's _jit_compile records the sources and flags of a build before building, and skips the
    build of an unchanged record, importing instead: a retry after a failed attempt must not be taken
    for a build that already happened (it ended as ImportError, 'cannot open shared object file')."""
    from torch.utils import cpp_extension

    monkeypatch.delenv(slim_header.PREPEND_ENV, raising=False)
    source = tmp_path / "cuda.cu"
    source.write_text("torch::Tensor f(torch::Tensor x) { return x + x; }")
    built_with = []

    def like_torch(name, sources, extra_cflags, extra_cuda_cflags, *args, **kwargs):
        old = cpp_extension.JIT_EXTENSION_VERSIONER.get_version(name)
        version = cpp_extension.JIT_EXTENSION_VERSIONER.bump_version_if_changed(
            name, sources, build_arguments=[extra_cflags, extra_cuda_cflags], build_directory=str(tmp_path),
            with_cuda=True, with_sycl=False, is_python_module=True, is_standalone=False)
        if version == old:
            raise ImportError(f"{name}.so: cannot open shared object file: No such file or directory")
        prepended = os.environ.get(slim_header.PREPEND_ENV, "")
        built_with.append(header_label(prepended))
        if prepended:
            raise RuntimeError(f"Error building extension '{name}'")  # x + x needs more than these headers
        return "module"

    name = f"retry_{os.getpid()}"
    wrapped = slim_header.with_slim_header(like_torch, tmp_path / "slim", tmp_path / slim_header.NARROW_FOLDER_NAME,
                                           slim_header.aten_ops_folder())
    try:
        assert wrapped(name, [str(source)], [], []) == "module"
    finally:
        cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(name, None)
    assert built_with == ["sliced", "narrow", "slim", "full"]
