"""CUDA files build with the slim torch/extension.h first, and with the full one when that fails."""
from profiler_agent.bundles import slim_header


def recording_compile(fail_with_slim):
    calls = []

    def compile_function(name, sources, extra_cflags, extra_cuda_cflags, *args, **kwargs):
        calls.append(list(extra_cuda_cflags or []))
        if fail_with_slim and any(flag.startswith("-I") for flag in extra_cuda_cflags or []):
            raise RuntimeError("Error building extension 'x'")
        return f"module built with {extra_cuda_cflags}"

    return compile_function, calls


def test_the_header_holds_torch_types_alone(tmp_path):
    folder = slim_header.slim_include_folder(tmp_path)
    text = (folder / "torch" / "extension.h").read_text()
    assert "#include <torch/types.h>" in text and "torch/all.h" not in text


def test_cuda_sources_get_the_slim_folder_first_and_keep_their_flags(tmp_path):
    compile_function, calls = recording_compile(fail_with_slim=False)
    wrapped = slim_header.with_slim_header(compile_function, tmp_path)
    wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"], None, [], [], "build", False, True, None, True, False)
    assert calls == [[f"-I{tmp_path}", "-O3"]]


def test_a_slim_failure_builds_again_with_the_full_header(tmp_path, capsys):
    compile_function, calls = recording_compile(fail_with_slim=True)
    wrapped = slim_header.with_slim_header(compile_function, tmp_path)
    module = wrapped("ext", ["main.cpp", "cuda.cu"], [], ["-O3"])
    assert calls == [[f"-I{tmp_path}", "-O3"], ["-O3"]]
    assert module == "module built with ['-O3']"
    assert "building again with the full header" in capsys.readouterr().err


def test_cpp_only_builds_are_untouched(tmp_path):
    compile_function, calls = recording_compile(fail_with_slim=True)
    slim_header.with_slim_header(compile_function, tmp_path)("ext", ["main.cpp"], ["-O3"], None)
    assert calls == [[]]
