"""The sliced torch headers: the narrowest a build's CUDA files are compiled with (slim_header tries
them first), to cut their cold compile.

With the narrow header (slim_header) cudafe++ and the host compiler still read 6.6 MB of
preprocessed headers for a small launcher, each once: ATen/core/TensorBody.h declares and defines
about 1,900 generated methods of at::Tensor (`x.abs()`, `x.add_(y)`...) with every op's dispatcher
header (ATen/MethodOperators.h), and each op's header (ATen/ops/empty_like.h) includes ATen's
context, device guards and IValue before its few inline functions. The sliced folder holds, ahead of
torch's own on the include path:

- ATen/core/TensorBody.h without the generated methods no source of the build names. Kept whole:
  everything hand-written (constructors, operators, `data_ptr`, `contiguous`..., the MaybeOwned
  traits), so the class's members, base and layout are torch's own. A generated method is kept, with
  all its overloads and its `_symint` and `__dispatch_` forms, when its name is a word of a CUDA
  source, of the hand-written parts, or of TensorBase.h (a call would otherwise find TensorBase's
  method of that name). The kept definitions are torch's text, with their ops' headers in place of
  MethodOperators.h;
- ATen/ops/<op>.h for each op the sources name: torch's text, including only the tensor, its options,
  Scalar and the op's dispatcher header;
- ATen/cuda/CUDAContext.h: CUDAContextLight.h (device properties, library handles), the current
  stream and the CUDA error checks, without ATen's context.

A call of a method or a name that is not there is a compile error (no other method has its name), and
the build is done again with the narrow headers (slim_header), so a build never fails because of
this folder; one that compiles calls the functions torch's full header would have chosen.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

DECLARATIONS_START = "//Tensor * add(Tensor & b);"
DEFINITION = re.compile(r"^// aten::[^\n]*\n(?:inline|template)[^\n]*\bTensor::(\w+)\(.*?^}\n", re.M | re.S)
DECLARATION = re.compile(r"^  [^\n/(]*?\b(\w+)\([^\n]*\) const[^\n]*;$")
OPS_CALLED = re.compile(r"\bat::_ops::(\w+)::")
OPS_STRUCT = re.compile(r"^struct TORCH_API (\w+) \{", re.M)
OPS_INCLUDE = re.compile(r"^#include <(ATen/ops/\w+_ops\.h)>$", re.M)
METHOD_OPERATORS = "#include <ATen/MethodOperators.h>"
WORD = re.compile(r"\b\w+\b")
CALLED_NAME = re.compile(r"\b(\w+)\s*\(")
DISPATCH_PREFIX = "__dispatch_"
SYMINT_SUFFIX = "_symint"
MIN_GENERATED = 100  # fewer generated methods found: this torch's header has another shape
# what an op's inline functions use, in place of the op header's own includes
OP_HEADER_INCLUDES = ("<optional>", "<string_view>", "<ATen/core/Tensor.h>", "<c10/core/Scalar.h>",
                      "<c10/core/TensorOptions.h>")
LIGHT_CUDA_CONTEXT = """#pragma once
// profiler_agent.executors.sliced_header: ATen/cuda/CUDAContext.h without ATen's context
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
"""


class Unsliceable(Exception):
    """This torch's headers do not have the shape expected: the build goes on with the narrow ones."""


def method_root(name: str) -> str:
    """The name a source writes for a generated method: `abs` for abs, abs_symint and __dispatch_abs."""
    return name.removeprefix(DISPATCH_PREFIX).removesuffix(SYMINT_SUFFIX)


def _declaration_block(lines: list[str]) -> tuple[int, int]:
    """The indexes [start, end) of the generated declarations inside the class."""
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == DECLARATIONS_START) + 1
    except StopIteration:
        raise Unsliceable("no generated declarations found") from None
    end = start
    while end < len(lines) and DECLARATION.match(lines[end]):
        end += 1
    if end - start < MIN_GENERATED:
        raise Unsliceable(f"only {end - start} generated declarations found")
    return start, end


def sliced_tensor_body(body: str, wanted_words: set[str], base_members: set[str],
                       op_headers: dict[str, str]) -> str:
    """TensorBody.h's text keeping the generated methods named by `wanted_words`, plus those the
    hand-written parts name or TensorBase has, with the headers of the ops their definitions call
    (`op_headers`: an op's struct, `add_Tensor`, to its header, `ATen/ops/add_ops.h`)."""
    if body.count(METHOD_OPERATORS) != 1:
        raise Unsliceable("MethodOperators.h is not included once")
    lines = body.split("\n")
    start, end = _declaration_block(lines)
    declared = {method_root(DECLARATION.match(line).group(1)) for line in lines[start:end]}
    if len(DEFINITION.findall(body)) < MIN_GENERATED:
        raise Unsliceable("too few generated definitions found")
    hand_written = DEFINITION.sub("", "\n".join(lines[:start] + lines[end:]))
    keep = declared & (set(wanted_words) | set(WORD.findall(hand_written)) | set(base_members))

    kept_declarations = [line for line in lines[start:end] if method_root(DECLARATION.match(line).group(1)) in keep]
    ops: set[str] = set()

    def keep_definition(match: re.Match) -> str:
        if method_root(match.group(1)) not in keep:
            return ""
        ops.update(OPS_CALLED.findall(match.group(0)))
        return match.group(0)

    text = DEFINITION.sub(keep_definition, "\n".join(lines[:start] + kept_declarations + lines[end:]))
    unknown = ops - op_headers.keys()
    if unknown:
        raise Unsliceable(f"no header declares {sorted(unknown)[:3]}")
    includes = "\n".join(f"#include <{header}>" for header in sorted({op_headers[op] for op in ops}))
    return text.replace(METHOD_OPERATORS, includes)


def method_op_headers(include_root: Path) -> dict[str, str]:
    """Each op struct that MethodOperators.h's headers declare, to its header."""
    headers: dict[str, str] = {}
    for header in OPS_INCLUDE.findall((include_root / "ATen" / "MethodOperators.h").read_text()):
        for struct in OPS_STRUCT.findall((include_root / header).read_text()):
            headers[struct] = header
    return headers


def lean_op_header(text: str) -> str:
    """An op's header (ATen/ops/<op>.h) including only what its inline functions use."""
    lines = [line for line in text.split("\n") if not line.startswith("#include") or OPS_INCLUDE.match(line)]
    try:
        at = lines.index("#pragma once") + 1
    except ValueError:
        raise Unsliceable("an op header without #pragma once") from None
    return "\n".join(lines[:at] + [f"#include {header}" for header in OP_HEADER_INCLUDES] + lines[at:])


def source_words(sources) -> set[str]:
    """Every word of the build's CUDA sources."""
    words: set[str] = set()
    for source in sources:
        if str(source).endswith((".cu", ".cuh")):
            try:
                words.update(WORD.findall(Path(source).read_text(errors="replace")))
            except OSError:
                continue
    return words


def sliced_files(include_root: Path, words: set[str], ops: list[str]) -> dict[str, str]:
    """The sliced folder's files (relative path to text) for sources made of `words` naming `ops`."""
    include_root = Path(include_root)
    try:
        base_members = set(CALLED_NAME.findall((include_root / "ATen" / "core" / "TensorBase.h").read_text()))
        files = {"ATen/core/TensorBody.h": sliced_tensor_body(
            (include_root / "ATen" / "core" / "TensorBody.h").read_text(), words, base_members,
            method_op_headers(include_root))}
        for op in ops:
            files[f"ATen/ops/{op}.h"] = lean_op_header((include_root / "ATen" / "ops" / f"{op}.h").read_text())
        if (include_root / "ATen" / "cuda" / "CUDAContextLight.h").is_file():
            files["ATen/cuda/CUDAContext.h"] = LIGHT_CUDA_CONTEXT
    except OSError as exc:
        raise Unsliceable(f"a torch header could not be read: {exc}") from None
    return files


def folder_name(files: dict[str, str]) -> str:
    """A name for the folder holding `files`, from their paths and content."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()[:16]
