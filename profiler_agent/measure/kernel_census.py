"""The kernel census behind the `no_custom_kernel` flag: what the candidate and the reference ran, as
torch.profiler sees one call of each.

CUDA: the names of the GPU kernels each call launched. The candidate has a custom kernel when it
launched a kernel whose code came from the bundle's own build: a name defined by the shared objects
and cubins in the run's build folder and the bundle, or by the run's Triton cache
(profiler_agent.measure.kernel_symbols), and no ATen or vendor-library kernel (`is_library_kernel`).
Everything else is not custom: torch's kernels, cuBLAS's and cuDNN's, the driver's copies and fills
(`memcpy32_post`, `memcpy128` from copies captured in a CUDA graph). Only when the build defined no
name but the candidate loaded a native module or a kernel toolkit (a JIT that keeps nothing on disk)
does the older rule decide: a kernel the reference did not launch and no library owns; a reference
that launched no kernel then leaves it undecided (the profiler may not see the device at all).

CPU: the profiler sees aten ops, never the loops of a compiled extension. The candidate has a custom
kernel when it loaded a native module (or a kernel toolkit; `loading.uses_custom_kernel`) and its
aten compute ops do not cover the reference's, i.e. the extension did work the reference did with
torch ops. A candidate that loaded no native module has none. Compute ops are the innermost aten ops
of a call, allocation, view and copy ops left out (`aten::relu` runs `aten::clamp_min`: both calls
count as `clamp_min`). When the reference calls no compute op the census cannot tell, and the
loaded-modules check decides alone.

The census runs in the judged process, beside submission code (which could notice the profiler, or
name its kernels like ATen's): the flag points an organizer at a submission, it is never a verdict.
A call that cannot be profiled leaves the census undecided (`kernels` null).

This module imports torch only inside its functions: the agent process reads `from_report` without it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass

MAX_NAMES = 20  # per list in the result
MAX_NAME_CHARS = 200

# Allocation, view, copy and conversion ops: moving data around is not the computation.
NON_COMPUTE_OPS = frozenset(
    "aten::" + name
    for name in (
        "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
        "ones", "ones_like", "new_zeros", "new_ones", "view", "view_as", "reshape", "_reshape_alias",
        "_unsafe_view", "contiguous", "clone", "to", "_to_copy", "copy_", "detach", "detach_", "t",
        "transpose", "permute", "expand", "expand_as", "as_strided", "resize_", "fill_", "zero_",
        "alias", "lift_fresh", "resolve_conj", "resolve_neg", "unsqueeze", "squeeze", "flatten",
        "unflatten", "slice", "select", "narrow", "unbind", "split", "chunk", "numpy_T", "item",
        "_local_scalar_dense", "set_", "record_stream",
    )
)

# ATen's own kernels and the libraries it calls, matched on the kernel's qualified name (its own
# name, not its template arguments, which may well mention at:: or c10:: types).
_LIBRARY_NAMESPACES = (
    "at::", "at_cuda_detail::", "c10::", "cub::", "thrust::", "cutlass::", "cudnn::", "cublasLt::",
    "cublas::", "cask_cudnn::", "pytorch_flash::", "flash::", "internal::gemvx::",
)
_LIBRARY_NAME_PATTERNS = re.compile(
    r"""^(?:
        (?:sm\d{2,3}|ampere|volta|turing|maxwell|pascal|kepler|hopper|ada|blackwell)_\w+  # cuBLAS/cuDNN: ampere_sgemm_128x64_nn, sm90_xmma_gemm_...
      | nvjet_\w+                                 # cuBLAS 12.x on Hopper/Blackwell: nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT
      | cutlass\w*                                # cutlass_80_tensorop_s1688gemm_..., cuBLAS's cutlass instances
      | \w*xmma\w*                                # cuDNN/cuBLAS xmma kernels
      | \w*cudnn\w*                               # cudnn_infer_ampere_scudnn_..., xmma_cudnn_...
      | fmha_cutlass\w*                           # PyTorch's memory-efficient attention
      | (?:gemv2T_kernel_val|gemv2N_kernel|gemvNSP_kernel|gemmSN_TN_kernel|gemmSN_NN_kernel
          |gemmk1_kernel|splitKreduce_kernel|reduce_1Block_kernel)  # cuBLAS's generic BLAS kernels
      | (?:implicit_convolve_sgemm|explicit_convolve_sgemm|fft2d_r2c_\w+|fft2d_c2r_\w+|fft2d_c2c_\w+)  # cuDNN
      | (?:regular_fft|vector_fft|composite_2way_fft)\w*  # cuFFT
      | (?:softmax_warp_forward|softmax_warp_backward)  # ATen's persistent softmax, in no namespace
      | triton_(?:poi|red|per|tem|for|mm)_\w+        # torch.compile (Inductor) generated kernels
      | nccl\w*
      | (?:memcpy|memset)\w*                       # the driver's copy and fill kernels: memcpy32_post, memcpy128
    )$""",
    re.VERBOSE,
)
_MEMORY_ACTIVITY = ("Memcpy", "Memset")


def qualified_name(kernel: str) -> str:
    """The kernel's own qualified name: `void at::native::foo<float, ...>(int, float*)` gives
    `at::native::foo`, `relu_kernel(float const*, float*, long)` gives `relu_kernel`."""
    text = kernel.replace("(anonymous namespace)", "{anonymous}")
    head = []
    depth = 0
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(depth - 1, 0)
        elif char == "(" and depth == 0:
            break  # the parameter list
        elif depth == 0:
            head.append(char)
    words = "".join(head).split()
    return words[-1] if words else ""  # the last word: return types and `void` come first


def is_library_kernel(kernel: str) -> bool:
    """Whether `kernel` is ATen's, a vendor library's (cuBLAS, cuDNN, CUTLASS, cuFFT, CUB, NCCL) or
    a copy/fill the runtime did. Names are chosen by whoever writes a kernel: a heuristic."""
    if kernel.startswith(_MEMORY_ACTIVITY):
        return True
    name = qualified_name(kernel)
    return name.startswith(_LIBRARY_NAMESPACES) or bool(_LIBRARY_NAME_PATTERNS.match(name))


def is_own_kernel(kernel: str, own: set[str]) -> bool:
    """Whether the profiler's kernel name is one the bundle's build defined (mangled, demangled, or
    the same qualified name)."""
    if kernel in own:
        return True
    name = qualified_name(kernel)
    return bool(name) and any(qualified_name(symbol) == name for symbol in own)


def custom_kernels(candidate: list[str], reference: list[str]) -> list[str]:
    """The candidate's kernels that are neither launched by the reference nor a library's."""
    launched_by_reference = set(reference)
    return [k for k in candidate if k not in launched_by_reference and not is_library_kernel(k)]


def _unique(names) -> list[str]:
    return list(dict.fromkeys(names))


def gpu_kernels(events) -> list[str]:
    """Names of the device activities (kernels, copies, fills) among profiler events, in order."""
    from torch.autograd import DeviceType

    return _unique(e.name for e in events if e.device_type == DeviceType.CUDA)


def _is_compute(event) -> bool:
    return event.name.startswith("aten::") and event.name not in NON_COMPUTE_OPS


def _calls_compute(event) -> bool:
    return any(_is_compute(child) or _calls_compute(child) for child in event.cpu_children)


def cpu_compute_ops(events) -> list[str]:
    """The innermost aten compute ops among profiler events, in order."""
    from torch.autograd import DeviceType

    return _unique(
        e.name for e in events
        if e.device_type == DeviceType.CPU and _is_compute(e) and not _calls_compute(e)
    )


def profile_call(model, inputs: list, device) -> list:
    """The profiler events of one call of `model` on its own copies of `inputs`."""
    import torch
    from torch.autograd import profiler as autograd_profiler

    from profiler_agent.util import tensors
    from profiler_agent.util.submission_failures import submission_code

    copies = tensors.fresh_copies(inputs)  # copied outside the window: the copy kernels are ours
    tensors.synchronize(device)
    # Kineto under torch.profiler.profile, without its start's `hasattr(torch, "_inductor")`, which
    # imports torch._inductor: 0.9-1.2 s of CPU a judging for a setting of inductor's CUDA graphs
    profiler = autograd_profiler.profile(use_cpu=True, use_device="cuda" if device.type == "cuda" else None,
                                         use_kineto=True)
    with _quiet_stderr():  # Kineto logs each start and stop to fd 2, the submission's log
        profiler.__enter__()
    try:
        # submission_code: even a SystemExit raised in the call becomes an Exception caught above
        with torch.no_grad(), submission_code("kernel_census"):
            model(*copies)
            tensors.synchronize(device)
    finally:
        with _quiet_stderr():
            profiler.__exit__(None, None, None)
    return list(profiler.function_events)


@contextlib.contextmanager
def _quiet_stderr():
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass
class Census:
    seen: str  # "cuda_kernels" or "cpu_ops"
    candidate: list[str]
    reference: list[str]
    own: set[str] | None = None  # names the bundle's build defined; None: unknown (the older rule)

    def custom(self) -> list[str] | None:
        """CUDA: the candidate's kernels that came from the bundle's build and no library owns (or,
        without names from the build, that only it launched and no library owns); CPU: None."""
        if self.seen != "cuda_kernels":
            return None
        if self.own is None:
            return custom_kernels(self.candidate, self.reference)
        return [k for k in self.candidate if not is_library_kernel(k) and is_own_kernel(k, self.own)]

    def has_custom_kernel(self, loaded_native: bool) -> bool | None:
        """True/False, or None when the census cannot tell (a reference without kernels or compute ops).
        `loaded_native`: the candidate loaded a native module or a kernel toolkit."""
        if self.seen == "cuda_kernels":
            # nothing launched at all, or the older rule with a reference that launched nothing:
            # the profiler may not see the device (no CUPTI)
            if not (self.reference or (self.own is not None and self.candidate)):
                return None
            return bool(self.custom())
        if not loaded_native:
            return False
        if not self.reference:
            return None
        return not set(self.reference) <= set(self.candidate)

    def as_report(self) -> dict:
        custom = self.custom()
        return {
            "seen": self.seen,
            "candidate": _capped(self.candidate),
            "reference": _capped(self.reference),
            "custom": None if custom is None else _capped(custom),
        }


def take_census(reference, candidate, draw_inputs, device, own: set[str] | None = None) -> Census | None:
    """Profile one reference call and one candidate call on the inputs `draw_inputs()` gives; None
    when either cannot be profiled (the profiler, the inputs or the call raised)."""
    try:
        inputs = draw_inputs()
        reference_events = profile_call(reference, inputs, device)
        candidate_events = profile_call(candidate, inputs, device)
    except Exception:
        return None
    if device.type == "cuda":
        return Census("cuda_kernels", gpu_kernels(candidate_events), gpu_kernels(reference_events), own)
    return Census("cpu_ops", cpu_compute_ops(candidate_events), cpu_compute_ops(reference_events))


def _capped(names) -> list[str]:
    return [str(name)[:MAX_NAME_CHARS] for name in list(names)[:MAX_NAMES]]


def from_report(value) -> dict | None:
    """The census as the result carries it, rebuilt from what the judged process reported: only
    known keys, capped lists of strings (that process ran submission code)."""
    if not isinstance(value, dict) or value.get("seen") not in ("cuda_kernels", "cpu_ops"):
        return None
    out = {"seen": value["seen"]}
    for key in ("candidate", "reference", "custom"):
        names = value.get(key)
        if isinstance(names, list):
            out[key] = _capped(n for n in names if isinstance(n, str))
        else:
            out[key] = None if key == "custom" else []
    return out


def own_names_or_none(own: set[str], loaded_native: bool) -> set[str] | None:
    """The build's names for the census; None (the older rule) when the build defined none but the
    candidate loaded native code anyway (a kernel toolkit whose JIT keeps nothing on disk)."""
    return None if not own and loaded_native else own


def record(report: dict, reference, candidate, draw_inputs, device, loaded_native: bool,
           own: set[str] | None = None) -> None:
    """Take the census and let it decide `no_custom_kernel` in `report`; when it cannot, the flag
    the loaded-modules check set stays as it was. `own`: the kernel names the bundle's build defined
    (kernel_symbols.own_kernel_names)."""
    own = own_names_or_none(own, loaded_native) if own is not None else None
    census = take_census(reference, candidate, draw_inputs, device, own)
    report["kernels"] = census.as_report() if census else None
    custom = census.has_custom_kernel(loaded_native) if census else None
    if custom is None:
        return
    flags = [f for f in report["flags"] if f != "no_custom_kernel"]
    report["flags"][:] = flags if custom else flags + ["no_custom_kernel"]
