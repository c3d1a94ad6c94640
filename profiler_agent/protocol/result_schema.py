"""The result JSON (schema 1): its shape, checked before a result leaves the agent. Its names
(statuses, flags) are protocol.vocabulary's, shared with the site.

`empty_result()` gives every key with null values; `validate_result()` checks keys and types so a
malformed result never leaves the agent. Fields that were not measured stay null, never invented.
"""

from __future__ import annotations

from profiler_agent.protocol.vocabulary import FLAGS, REFERENCE_NUMPY_OUTCOMES, SCHEMA_VERSION, STATUSES

NUMBER = (int, float)
_OPT_NUMBER = (int, float, type(None))
_OPT_INT = (int, type(None))
_OPT_STR = (str, type(None))
_OPT_BOOL = (bool, type(None))

# Each shape maps a key to either a tuple of allowed types or a nested shape (a dict, or None when
# the whole sub-object may be null). Lists and free-form dicts are checked by type only.
_TIMING_STATS = {
    "median_ms": _OPT_NUMBER,
    "mean_ms": _OPT_NUMBER,
    "min_ms": _OPT_NUMBER,
    "std_ms": _OPT_NUMBER,
    "runs": _OPT_INT,
    "batched_ms": _OPT_NUMBER,  # per call, from batches of back-to-back calls (no per-call overhead)
    "overhead_pct": _OPT_NUMBER,  # share of median_ms that batched_ms does not have
}
_CORRECTNESS = {
    "passed": _OPT_BOOL,
    "trials": _OPT_INT,
    "max_abs_err": _OPT_NUMBER,
    "max_rel_err": _OPT_NUMBER,
    "atol": _OPT_NUMBER,
    "rtol": _OPT_NUMBER,
    "reference_numpy": (dict, type(None)),  # _REFERENCE_NUMPY, or null: no reference_numpy / not checked
}
# The bundle's numpy ground truth checked against its own reference model (never the verdict).
_REFERENCE_NUMPY = {"outcome": (str,), "max_abs_err": _OPT_NUMBER, "detail": _OPT_STR}
# The kernel census behind no_custom_kernel (profiler_agent.measure.kernel_census); null: not taken.
_KERNELS = {"seen": (str,), "candidate": (list,), "reference": (list,), "custom": (list, type(None))}
# The times checked from outside the judged process (profiler_agent.judge.timing_confirmation); null: not checked
# (a variant, a run that did not pass). `confirmed` null: could not be checked (CPU, no profiler).
_CONFIRMATION = {
    "method": _OPT_STR,  # "ncu", or null: no device profiler ran
    "kernel_ms": _OPT_NUMBER,  # the GPU's own sum of the candidate's kernel durations per call, median
    "reported_ms": _OPT_NUMBER,  # the candidate median the judged process reported
    "ratio": _OPT_NUMBER,  # reported_ms / kernel_ms
    "tolerance": _OPT_NUMBER,  # reported_ms may be this share below kernel_ms
    "calls_profiled": _OPT_INT,
    "kernels_capped": _OPT_BOOL,  # the profiler stopped at its launch cap: kernel_ms sums a subset
    # the candidate is ranked at its kernel record (kernel_speedup below the timed speedup, or without
    # one its median under kernel_ms, within tolerance); reported_ms keeps the judged process's figure
    "ranked_at_kernel_ms": _OPT_BOOL,
    "reference_reported_ms": _OPT_NUMBER,
    "reference_outside_ms": _OPT_NUMBER,  # the reference timed by the agent, no submission code loaded
    "reference_tolerance": _OPT_NUMBER,
    # the GPU's own sum of the reference's kernels per call, median, in the candidate's profile
    "reference_kernel_ms": _OPT_NUMBER,
    "kernel_speedup": _OPT_NUMBER,  # reference_kernel_ms / kernel_ms: no ranked speedup is above it
    # the speedup as the judged process timed it, where timing.speedup was lowered to what the records support
    "timed_speedup": _OPT_NUMBER,
    "confirmed": _OPT_BOOL,
    "reason": _OPT_STR,
}
# samples: {"reference": [ms, ...], "candidate": [...]}, at most 200 per-call times each, in order
# cases: {name: _CASE_FIGURES} for each timed input case (bundles.input_cases), in judging order; speedup is
# then the geometric mean of theirs. null: none timed (a test run, a failure before the verdict)
_TIMING = {"reference": _TIMING_STATS, "candidate": _TIMING_STATS, "speedup": _OPT_NUMBER,
           "samples": (dict, type(None)), "confirmation": (dict, type(None)), "cases": (dict, type(None))}
_CASE_FIGURES = {"reference_ms": _OPT_NUMBER, "candidate_ms": _OPT_NUMBER, "speedup": _OPT_NUMBER,
                 "kernel_speedup": _OPT_NUMBER, "confirmed": _OPT_BOOL}  # the case's own confirmation
_METRICS = {
    "flops": _OPT_NUMBER,
    "bytes": _OPT_NUMBER,
    "tflops": _OPT_NUMBER,
    "bandwidth_gbs": _OPT_NUMBER,
    "pct_peak_bandwidth": _OPT_NUMBER,
    "pct_peak_flops": _OPT_NUMBER,
}
_TELEMETRY = {
    "power_w": {"mean": _OPT_NUMBER, "max": _OPT_NUMBER},
    "energy_j_per_call": _OPT_NUMBER,
    "sm_clock_mhz": _OPT_NUMBER,
    "mem_clock_mhz": _OPT_NUMBER,
    "temperature_c": _OPT_NUMBER,
    "throttle_reasons": (list,),
    "peak_memory_bytes": _OPT_NUMBER,
    "trace": (list,),  # [_TRACE_POINT, ...] over the timed region, at most ~200; [] when not sampled
}
# one telemetry sample: seconds since sampling started, board power, SM (MetaX: XCORE) clock
_TRACE_POINT = {"t_s": NUMBER, "power_w": _OPT_NUMBER, "sm_clock_mhz": _OPT_NUMBER}
_DEVICE = {
    "kind": (str,),
    "name": _OPT_STR,
    "uuid": _OPT_STR,
    "driver": _OPT_STR,
    "torch": _OPT_STR,
    "peak_gbps": _OPT_NUMBER,
    "peak_tflops": _OPT_NUMBER,
}
# Nsight Compute (profiler_agent.judge.ncu_output): per candidate call, median over the profiled calls
_NCU = {
    "kernels": (list,),
    "calls": (int,),
    "duration_ms": _OPT_NUMBER,
    "dram_read_bytes": _OPT_NUMBER,
    "dram_write_bytes": _OPT_NUMBER,
    "dram_bandwidth_gbs": _OPT_NUMBER,
    "pct_peak_bandwidth": _OPT_NUMBER,
    "version": _OPT_STR,
}
# A profile report (profiler_agent.judge.profile_report), in a profile run alone; null in every other.
_PROFILE = {
    "available": (bool,),  # false: no kernel profiled, `reason` says why (a CPU host, no ncu, ...)
    "tool": _OPT_STR,  # "ncu"
    "version": _OPT_STR,
    "vendor": _OPT_STR,  # "nvidia", "metax", "cpu"
    "reason": _OPT_STR,
    "kernels_per_model": _OPT_INT,
    "sections": (list,),
    "clock_control": _OPT_STR,
    "metrics": _OPT_STR,  # "listed", or "sections only" when ncu refused the metric list
    "table_source": _OPT_STR,  # "profile run", or "import" (read back from the .ncu-rep)
    "kernels": (list,),  # [_PROFILED_KERNEL, ...] in launch order
    "models": (dict,),  # {"candidate": _PROFILED_MODEL, "reference": ...}
    "report_file": (dict, type(None)),  # _REPORT_FILE of the .ncu-rep, or null: none written
    "duration_s": _OPT_NUMBER,
}
_PROFILED_KERNEL = {
    "model": _OPT_STR,  # "candidate", "reference", or null: ncu printed no NVTX ranges
    "launch": (int,),
    "name": (str,),
    "duration_ms": _OPT_NUMBER,
    "grid": (list, type(None)),
    "block": (list, type(None)),
    "registers": _OPT_INT,
    "achieved_occupancy_pct": _OPT_NUMBER,
    "theoretical_occupancy_pct": _OPT_NUMBER,
    "sm_pct": _OPT_NUMBER,
    "memory_pct": _OPT_NUMBER,
    "dram_pct": _OPT_NUMBER,
    "l2_pct": _OPT_NUMBER,
    "stalls": (list,),  # [_STALL, ...], at most 3, largest first
    "flops": _OPT_NUMBER,
    "dram_bytes": _OPT_NUMBER,
    "flop_per_s": _OPT_NUMBER,
    "arithmetic_intensity": _OPT_NUMBER,  # FLOP per DRAM byte
}
_STALL = {"reason": (str,), "share_pct": NUMBER, "cycles_per_instruction": NUMBER}
_PROFILED_MODEL = {"kernels": (int,), "duration_ms": _OPT_NUMBER, "capped": (bool,)}
# the .ncu-rep: `stored` true once the site has it, false with `why` when it was not sent or was refused,
# null where there is no site (judge --mode profile)
_REPORT_FILE = {"name": (str,), "bytes": (int,), "sha256": (str,), "stored": _OPT_BOOL, "why": _OPT_STR}
_LOGS = {"compile": (str,), "stdout": (str,), "stderr": (str,)}
_DURATIONS = {
    "compile": _OPT_NUMBER,
    "correctness": _OPT_NUMBER,
    "timing": _OPT_NUMBER,
    "kernel_census": _OPT_NUMBER,
    "verify": _OPT_NUMBER,  # the trusted verifier, from its settings to its verdict
    "confirm": _OPT_NUMBER,  # the timing confirmation (profiler and check), main candidate only
    "total": _OPT_NUMBER,
}
# A variant (cudacode_ori.py) carries the judged parts of a result, not the run-wide ones.
VARIANT_SHAPE = {
    "status": (str,),
    "reason": _OPT_STR,  # one line for every status but passed: the stage, the limit, the first failed trial
    "flags": (list,),
    "correctness": _CORRECTNESS,
    "timing": _TIMING,
    "metrics": _METRICS,
    "telemetry": _TELEMETRY,
    "kernels": (dict, type(None)),
    "logs": _LOGS,
    "durations_s": _DURATIONS,
}
RESULT_SHAPE = {
    "schema": (int,),
    "status": (str,),
    "reason": _OPT_STR,  # one line for every status but passed: the stage, the limit, the first failed trial
    "flags": (list,),
    "device": _DEVICE,
    "correctness": _CORRECTNESS,
    "timing": _TIMING,
    "metrics": _METRICS,
    "telemetry": _TELEMETRY,
    "ncu": _NCU,
    "variants": (dict,),
    "kernels": (dict, type(None)),
    "self_test": {"exit_code": _OPT_INT, "output": (str,)},
    "logs": _LOGS,
    "durations_s": _DURATIONS,
    # the reference's inputs of trial 0, [{"dtype": "float32", "shape": [4096, 1024]}, ...]; null when
    # the verifier did not run (a build that failed, say)
    "inputs": (list, type(None)),
    "profile": (dict, type(None)),  # _PROFILE in a profile run, else null
}
_NULLABLE_OBJECTS = {"self_test", "ncu"}


def _empty(shape: dict) -> dict:
    out = {}
    for key, spec in shape.items():
        if isinstance(spec, dict):
            out[key] = _empty(spec)
        elif spec == (list,):
            out[key] = []
        elif spec == (dict,):
            out[key] = {}
        elif spec == (str,):
            out[key] = ""
        else:
            out[key] = None
    return out


def conform(values, shape: dict) -> dict:
    """The flat keys of `shape` taken from `values` (an untrusted report), each kept only when its
    type is the schema's, else null: a malformed field never makes the whole result invalid."""
    out = {}
    values = values if isinstance(values, dict) else {}
    for key, spec in shape.items():
        item = values.get(key)
        if isinstance(spec, dict) or (isinstance(item, bool) and bool not in spec) or not isinstance(item, spec):
            item = None
        out[key] = item
    return out


MAX_INPUTS = 64  # described inputs kept: a reference with more is described by its first ones


def _input_spec(item) -> bool:
    return (isinstance(item, dict) and set(item) == {"dtype", "shape"} and isinstance(item["dtype"], str)
            and 0 < len(item["dtype"]) <= 40 and isinstance(item["shape"], list) and len(item["shape"]) <= 16
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in item["shape"]))


def conform_inputs(values) -> list | None:
    """The inputs' descriptions as the schema has them, or None when any is malformed."""
    if not isinstance(values, list) or not all(_input_spec(item) for item in values[:MAX_INPUTS]):
        return None
    return [{"dtype": item["dtype"], "shape": list(item["shape"])} for item in values[:MAX_INPUTS]]


TIMING_STATS_SHAPE = _TIMING_STATS
CORRECTNESS_SHAPE = _CORRECTNESS
CONFIRMATION_SHAPE = _CONFIRMATION
PROFILE_SHAPE = _PROFILE
PROFILED_KERNEL_SHAPE = _PROFILED_KERNEL


def empty_confirmation() -> dict:
    return _empty(_CONFIRMATION)


def empty_timing_stats() -> dict:
    return _empty(_TIMING_STATS)


def empty_variant() -> dict:
    """A variant result with every key present and nothing measured (status still to be set)."""
    variant = _empty(VARIANT_SHAPE)
    variant["status"] = None
    return variant


def empty_result() -> dict:
    """A result with every key present and nothing measured (status still to be set)."""
    result = _empty(RESULT_SHAPE)
    result["schema"] = SCHEMA_VERSION
    result["status"] = None
    result["device"]["kind"] = None
    result["self_test"] = None
    result["ncu"] = None
    result["profile"] = None
    return result


def _check(value, shape: dict, path: str, nullable: set[str] = frozenset()) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"{path or 'result'}: expected an object, got {type(value).__name__}")
    missing = sorted(set(shape) - set(value))
    extra = sorted(set(value) - set(shape))
    if missing or extra:
        raise ValueError(f"{path or 'result'}: missing keys {missing}, unknown keys {extra}")
    for key, spec in shape.items():
        where = f"{path}.{key}" if path else key
        item = value[key]
        if isinstance(spec, dict):
            if item is None and key in nullable:
                continue
            _check(item, spec, where)
        elif isinstance(item, bool) and bool not in spec:
            # bool is an int subclass; a flag where a number belongs is a bug, not a value
            raise ValueError(f"{where}: expected {_names(spec)}, got bool")
        elif not isinstance(item, spec):
            raise ValueError(f"{where}: expected {_names(spec)}, got {type(item).__name__}")


def _names(types: tuple) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


def _check_status_and_flags(value: dict, path: str) -> None:
    if value["status"] not in STATUSES:
        raise ValueError(f"{path}status: {value['status']!r} is not one of {', '.join(STATUSES)}")
    unknown = [f for f in value["flags"] if f not in FLAGS]
    if unknown:
        raise ValueError(f"{path}flags: unknown flags {unknown}")


def _check_nullable_parts(value: dict, path: str) -> None:
    numpy_check = value["correctness"]["reference_numpy"]
    if numpy_check is not None:
        _check(numpy_check, _REFERENCE_NUMPY, f"{path}correctness.reference_numpy")
        if numpy_check["outcome"] not in REFERENCE_NUMPY_OUTCOMES:
            raise ValueError(f"{path}correctness.reference_numpy.outcome: {numpy_check['outcome']!r}")
    if value["kernels"] is not None:
        _check(value["kernels"], _KERNELS, f"{path}kernels")
    if value["timing"]["confirmation"] is not None:
        _check(value["timing"]["confirmation"], _CONFIRMATION, f"{path}timing.confirmation")
    for name, figures in (value["timing"]["cases"] or {}).items():
        _check(figures, _CASE_FIGURES, f"{path}timing.cases.{name}")


def _check_trace(value: dict, path: str) -> None:
    for i, point in enumerate(value["telemetry"]["trace"]):
        _check(point, _TRACE_POINT, f"{path}telemetry.trace[{i}]")


def _check_profile(profile: dict | None) -> None:
    if profile is None:
        return
    _check(profile, _PROFILE, "profile")
    for i, kernel in enumerate(profile["kernels"]):
        _check(kernel, _PROFILED_KERNEL, f"profile.kernels[{i}]")
        for j, stall in enumerate(kernel["stalls"]):
            _check(stall, _STALL, f"profile.kernels[{i}].stalls[{j}]")
    for name, model in profile["models"].items():
        _check(model, _PROFILED_MODEL, f"profile.models.{name}")
    if profile["report_file"] is not None:
        _check(profile["report_file"], _REPORT_FILE, "profile.report_file")


def validate_variant(variant: dict, path: str = "variant") -> None:
    _check(variant, VARIANT_SHAPE, path)
    _check_trace(variant, f"{path}.")
    _check_status_and_flags(variant, f"{path}.")
    _check_nullable_parts(variant, f"{path}.")


def validate_result(result: dict) -> None:
    """Raise ValueError when `result` is not a well-formed schema-1 result."""
    _check(result, RESULT_SHAPE, "", nullable=_NULLABLE_OBJECTS)
    if result["schema"] != SCHEMA_VERSION:
        raise ValueError(f"schema: expected {SCHEMA_VERSION}, got {result['schema']!r}")
    if result["device"]["kind"] not in ("cuda", "cpu"):
        raise ValueError(f"device.kind: expected 'cuda' or 'cpu', got {result['device']['kind']!r}")
    _check_status_and_flags(result, "")
    _check_nullable_parts(result, "")
    _check_trace(result, "")
    _check_profile(result["profile"])
    if result["inputs"] is not None and conform_inputs(result["inputs"]) != result["inputs"]:
        raise ValueError("inputs: expected at most 64 objects {dtype: string, shape: list of sizes}")
    for name, variant in result["variants"].items():
        validate_variant(variant, f"variants.{name}")
