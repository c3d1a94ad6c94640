"""Peak dense TFLOP/s per device model and dtype, from vendors' published specifications.

Every figure is *dense* (vendors often headline the 2:4-sparsity figure, twice as large; those are
halved here). Keys: "fp32" (CUDA cores, no tensor cores), "tf32", "fp16", "bf16" (tensor cores) and
"fp8" where the device has it. A device or dtype missing here answers None: never guessed.

Names are matched against what torch and NVML report (`torch.cuda.get_device_name`,
`nvmlDeviceGetName`), e.g. "NVIDIA H100 80GB HBM3" (SXM5), "NVIDIA H100 PCIe", "MetaX C500". The first
pattern that matches wins, so variants with other figures come before the plain name.
"""

from __future__ import annotations

import re

# H100 SXM5 / PCIe: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), table "NVIDIA H100 ... Data
# Center GPUs compared" (dense | sparse): SXM5 FP32 66.9, TF32 494.7, FP16/BF16 989.4, FP8 1978.9;
# PCIe FP32 51.2, TF32 378, FP16/BF16 756, FP8 1513. The H100 and H200 datasheets print the same figures
# rounded, with sparsity (989 / 1979 / 3958 TFLOPS for SXM).
_H100_SXM = {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9}
_H100_PCIE = {"fp32": 51.2, "tf32": 378.0, "fp16": 756.0, "bf16": 756.0, "fp8": 1513.0}
# H100 NVL and H200 NVL datasheets, per GPU, sparse: TF32 835, FP16/BF16 1671, FP8 3341; FP32 60.
_HOPPER_NVL = {"fp32": 60.0, "tf32": 417.5, "fp16": 835.5, "bf16": 835.5, "fp8": 1670.5}
# H20 (China SKU): NVIDIA's H20 product brief as reported publicly: FP32 44, TF32 74, FP16/BF16 148,
# FP8 296 TFLOPS, dense.
_H20 = {"fp32": 44.0, "tf32": 74.0, "fp16": 148.0, "bf16": 148.0, "fp8": 296.0}
# A100 SXM4 and PCIe, 40 and 80 GB (A800 alike): NVIDIA A100 datasheet: FP32 19.5, TF32 156, FP16/BF16
# 312 (sparse 312 / 624). No FP8.
_A100 = {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0}
# L40S datasheet (dense | sparse): FP32 91.6, TF32 183 | 366, FP16/BF16 362.05 | 733, FP8 733 | 1466.
_L40S = {"fp32": 91.6, "tf32": 183.0, "fp16": 362.05, "bf16": 362.05, "fp8": 733.0}
# GeForce RTX 4090: NVIDIA Ada Lovelace architecture whitepaper, appendix table: FP32 82.6, TF32 82.6,
# FP16/BF16 165.2 and FP8 330.3 with FP32 accumulate (torch's matmuls accumulate in FP32; GeForce runs
# FP16-accumulate at twice that, 330.3).
_RTX_4090 = {"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "bf16": 165.2, "fp8": 330.3}
# MetaX C500 (曦云 C500): MetaX's published C500 figures, FP16/BF16 280 and TF32 140 TFLOPS (as quoted in
# public benchmark notes; a measured 8192^3 FP16 GEMM reaches 275 on its C550 sibling). No FP32
# (non-tensor) figure was found in a source: left out, so fp32 answers None.
_METAX_C500 = {"tf32": 140.0, "fp16": 280.0, "bf16": 280.0}

# (pattern, peaks): the first match wins; an empty dict marks a known variant whose figures we lack.
_TABLE: list[tuple[re.Pattern, dict]] = [
    (re.compile(r"\bH100\b.*\bPCIe\b", re.I), _H100_PCIE),
    (re.compile(r"\bH100\b.*\bNVL\b", re.I), _HOPPER_NVL),
    (re.compile(r"\bH100\b.*(\bSXM|\bHBM3\b)", re.I), _H100_SXM),
    (re.compile(r"\bH800\b.*\bPCIe\b", re.I), _H100_PCIE),  # H800 datasheet: same compute as H100
    (re.compile(r"\bH800\b", re.I), _H100_SXM),
    (re.compile(r"\bH200\b.*\bNVL\b", re.I), _HOPPER_NVL),
    (re.compile(r"\bH200\b", re.I), _H100_SXM),  # H200 SXM: H100 SXM compute, more and faster memory
    (re.compile(r"\bH20\b", re.I), _H20),
    (re.compile(r"\bA[18]00\b", re.I), _A100),
    (re.compile(r"\bL40S\b", re.I), _L40S),
    (re.compile(r"\bRTX 4090 D\b", re.I), {}),  # the China SKU has fewer SMs: not in the table
    (re.compile(r"\bRTX 4090\b", re.I), _RTX_4090),
    (re.compile(r"(?<![0-9A-Za-z])(MX)?C500(?![0-9A-Za-z])", re.I), _METAX_C500),
]

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


def peaks_for(device_name: str | None) -> dict[str, float]:
    """Every dense peak known for the named device (an empty dict when the model is unknown)."""
    for pattern, peaks in _TABLE:
        if device_name and pattern.search(device_name):
            return dict(peaks)
    return {}


def peak_tflops(device_name: str | None, dtype_key: str | None) -> float | None:
    """Dense peak TFLOP/s of the named device for one dtype key, or None when not known."""
    if not dtype_key:
        return None
    return peaks_for(device_name).get(dtype_key)


# Peak DRAM bandwidth, GB/s, for devices whose management library does not report bus width and
# memory clock (NVML does: nvml.peak_gbps). MetaX C500: 4096-bit HBM2e at 1800 MHz, double data rate,
# as mcGetDeviceProperties reports it (memoryBusWidth 4096, memoryClockRate 1800000 kHz) on a C500:
# 4096 / 8 * 1.8e9 * 2 = 1843.2 GB/s (MetaX quotes 1.8 TB/s).
_PEAK_GBPS: list[tuple[re.Pattern, float]] = [
    (re.compile(r"(?<![0-9A-Za-z])(MX)?C500(?![0-9A-Za-z])", re.I), 1843.2),
]


def peak_gbps_for(device_name: str | None) -> float | None:
    for pattern, gbps in _PEAK_GBPS:
        if device_name and pattern.search(device_name):
            return gbps
    return None


# torch dtype name -> the key of the peak table above that applies to it
_PEAK_KEYS = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
}


def flops_dtype(values, allow_tf32: bool) -> str | None:
    """Which peak a call's FLOPs count against: the floating-point dtype of its tensors (the
    reference's inputs and outputs). fp32 means the tf32 tensor-core peak where `allow_tf32` (torch
    lets the units doing most of the FLOPs use TF32: tf32_allowed). None when there is no floating-point tensor, when they mix dtypes (which unit did the work
    is then unknown), or for a dtype without a peak (float64, complex)."""
    import torch

    from profiler_agent.util.tensors import flatten

    names = {
        str(t.dtype).removeprefix("torch.")
        for t in flatten(list(values))
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
    }
    if len(names) != 1:
        return None
    key = _PEAK_KEYS.get(names.pop())
    return "tf32" if key == "fp32" and allow_tf32 else key
