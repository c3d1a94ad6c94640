"""Importing a bundle's Python files under unique module names, and building its models."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from profiler_agent.bundles import input_cases

# Module-name prefixes of kernel toolkits that count as custom kernels without a compiled extension.
KERNEL_TOOLKITS = ("triton", "cupy", "numba", "tilelang", "cuda")


def import_file(path: Path, role: str):
    """Import `path` as a fresh module; unique names let two files both called e.g. 'relu' coexist."""
    name = f"_profiler_agent_{role}_{uuid.uuid4().hex[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def attribute(module, name: str, filename: str):
    if not hasattr(module, name):
        raise AttributeError(f"{filename} defines no {name}")
    return getattr(module, name)


def _is_native_under(module, roots: list[str]) -> bool:
    filename = getattr(module, "__file__", None) or ""
    return filename.endswith((".so", ".pyd", ".dylib")) and any(
        str(Path(filename).resolve()).startswith(root) for root in roots
    )


def uses_custom_kernel(module, modules_before: set[str], native_dirs: list[Path]) -> bool:
    """True when the candidate loaded a native module from one of `native_dirs` (the build cache,
    the bundle) or uses a kernel toolkit such as Triton or CuPy."""
    roots = [str(Path(d).resolve()) for d in native_dirs]
    new_modules = [sys.modules.get(name) for name in set(sys.modules) - modules_before]
    if any(_is_native_under(m, roots) for m in new_modules):
        return True
    for value in vars(module).values():
        # load_inline returns its module without always registering it in sys.modules
        if isinstance(value, ModuleType):
            if _is_native_under(value, roots):
                return True
            owner = value.__name__
        else:
            owner = type(value).__module__ or ""
        if owner.split(".")[0] in KERNEL_TOOLKITS:
            return True
    return False


@dataclass
class ReferenceApi:
    Model: type
    get_inputs: object
    get_init_inputs: object
    reference_numpy: object = None  # the optional numpy ground truth (profiler_agent.checkers.ground_truth)
    backward: bool = False  # judged forward and backward (profiler_agent.bundles.forward_backward)
    case: input_cases.InputCase | None = None  # the input case get_inputs draws (bundles.input_cases)
    cases: list = field(default_factory=list)  # every case the reference declares, in order


def reference_api(path: Path, case: str | None = None, correctness_only: bool = False) -> ReferenceApi:
    """The reference's parts, get_inputs drawing the input case `case` (None: the judging's first,
    input_cases.select)."""
    module = import_file(path, "reference")
    model, get_init_inputs = (attribute(module, name, path.name) for name in ("Model", "get_init_inputs"))
    cases = input_cases.declared_cases(module, path.name)
    selected = input_cases.select(cases, case, correctness_only)
    backward = getattr(module, "JUDGE_BACKWARD", False) is True  # bundles.forward_backward.FLAG
    # a numpy ground truth holds the forward alone: not what a forward-and-backward call returns
    return ReferenceApi(model, selected.inputs, get_init_inputs,
                        reference_numpy=None if backward else getattr(module, "reference_numpy", None),
                        backward=backward, case=selected, cases=cases)


def build_model(model_class, get_init_inputs, seed: int, device, backward: bool = False):
    """The model as every process builds it: the same seed before the init inputs and before the
    constructor, so the reference and the candidate draw the same parameters everywhere. `backward`
    (ReferenceApi.backward): wrapped to be called forward and backward (bundles.forward_backward)."""
    import torch

    from profiler_agent.util import tensors

    torch.manual_seed(seed)
    init_inputs = list(get_init_inputs())
    torch.manual_seed(seed)
    model = model_class(*tensors.fresh_copies(init_inputs)).to(device)
    if backward:
        from profiler_agent.bundles.forward_backward import ForwardBackward

        return ForwardBackward(model)
    return model
