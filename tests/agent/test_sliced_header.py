"""The sliced torch headers (the narrowest a judged build's CUDA files compile with), made from this
torch's own headers: what they keep and leave out, and a launcher compiled with them against one
compiled with torch's own tensor class and op headers (the narrow header: same symbols defined and
called)."""
import re
import shutil
import subprocess

import pytest

from profiler_agent.executors import sliced_header, slim_header

LAUNCHER = """#include <torch/extension.h>
torch::Tensor twice_relu(torch::Tensor x, torch::Tensor bias) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
  auto xc = x.contiguous(); auto y = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>(); float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0 ? 2 * in[i] : 0;
  return y.add(bias).view({-1}).mul(at::zeros({1}, x.options()).add(1));
}
"""


def include_root():
    return slim_header.aten_ops_folder().parent.parent


def sliced_body(words):
    root = include_root()
    return sliced_header.sliced_tensor_body((root / "ATen" / "core" / "TensorBody.h").read_text(), set(words),
                                            set(sliced_header.CALLED_NAME.findall(
                                                (root / "ATen" / "core" / "TensorBase.h").read_text())),
                                            sliced_header.method_op_headers(root))


def test_the_tensor_class_keeps_the_methods_named_and_everything_hand_written():
    full = (include_root() / "ATen" / "core" / "TensorBody.h").read_text()
    text = sliced_body({"add", "view"})
    assert "#include <ATen/MethodOperators.h>" not in text and "#include <ATen/ops/add_ops.h>" in text
    for kept in ("at::Tensor add(const at::Tensor & other", "inline at::Tensor Tensor::add(",
                 "inline at::Tensor Tensor::view_symint(", "struct MaybeOwnedTraits<at::Tensor>",
                 "Tensor::expect_contiguous("):
        assert kept in full and kept in text
    # named by no source, by no hand-written part and by no TensorBase member: gone, with its op's header
    for left_out in ("at::Tensor logdet() const;", "inline at::Tensor Tensor::logdet(", "ATen/ops/logdet_ops.h"):
        assert left_out in full or "ops.h" in left_out
        assert left_out not in text
    assert len(text) < len(full) / 3


def test_a_torch_header_of_another_shape_is_refused_not_guessed():
    body = (include_root() / "ATen" / "core" / "TensorBody.h").read_text()
    with pytest.raises(sliced_header.Unsliceable, match="generated declarations"):
        sliced_header.sliced_tensor_body(body.replace(sliced_header.DECLARATIONS_START, ""), set(), set(), {})
    with pytest.raises(sliced_header.Unsliceable, match="no header declares"):
        sliced_header.sliced_tensor_body(body, {"add"}, set(), {})


def test_an_op_header_keeps_its_functions_and_drops_atens_context():
    text = sliced_header.lean_op_header((slim_header.aten_ops_folder() / "empty_like.h").read_text())
    assert "inline at::Tensor empty_like(" in text and "#include <ATen/ops/empty_like_ops.h>" in text
    assert "ATen/Context.h" not in text and "ATen/DeviceGuard.h" not in text


def symbols(obj):
    listed = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[-1] + " " + line.split()[-2] for line in listed.splitlines()
                  if re.search(r" [TUW] ", line))


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None, reason="needs a C++ compiler and nm")
def test_a_launcher_compiled_with_the_sliced_headers_defines_and_calls_what_torchs_own_make_it(tmp_path):
    from torch.utils import cpp_extension

    source = tmp_path / "cuda.cu"
    source.write_text(LAUNCHER)
    ops = slim_header.ops_named([source], slim_header.aten_ops_folder())
    assert ops == ["empty_like", "zeros"]
    folder = slim_header.sliced_include_folder(tmp_path / "sliced", [source], ops, include_root())
    assert (folder / "ATen" / "core" / "TensorBody.h").is_file() and (folder / "ATen" / "ops" / "zeros.h").is_file()
    includes = [f"-I{path}" for path in cpp_extension.include_paths()]
    made = {}
    narrow = slim_header.narrow_include_folder(tmp_path / "narrow", ops)  # torch's own tensor class and ops
    for label, extra in (("narrow", [f"-I{narrow}"]), ("sliced", [f"-I{folder}"])):
        obj, preprocessed = tmp_path / f"{label}.o", tmp_path / f"{label}.ii"
        for what, out in (("-c", obj), ("-E", preprocessed)):
            done = subprocess.run(["g++", "-std=c++17", "-O1", "-fPIC", what, "-x", "c++", *extra, *includes,
                                   str(source), "-o", str(out)], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr[-2000:]
        made[label] = (symbols(obj), preprocessed.stat().st_size)
    assert made["sliced"][0] == made["narrow"][0]  # the same functions defined, the same ones called
    assert any("twice_relu" in name for name in made["sliced"][0])
    assert made["sliced"][1] < made["narrow"][1] / 2  # what cudafe++ and the host compiler read
