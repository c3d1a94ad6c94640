"""A profile run's report as pages and the API show it: the `profile` part of its result, read field by
field. An agent's report is machine output the site stores whole (result_schema keeps what it does not
know), so what is shown is only what has the documented type: a number that is not one, a name beyond its
length or a list beyond its size is left out, never shown as sent. The shape: docs/architecture.md, "The
result"; the agent's reading of Nsight Compute: profiler_agent/judge/profile_output.py."""
import math

from django.utils.translation import gettext_lazy as _

MAX_KERNELS = 200  # an agent profiles at most twice PROFILE_KERNELS_PER_MODEL
NAME_CHARS = 512
TEXT_CHARS = 2000
MODELS = ("candidate", "reference")
# Warp states Nsight Compute names (WarpStateStats): what a warp waited on between two instructions.
STALL_LABELS = {
    "long_scoreboard": _("Long scoreboard (waiting on global or local memory)"),
    "short_scoreboard": _("Short scoreboard (waiting on shared memory or special math)"),
    "barrier": _("Barrier (waiting at __syncthreads)"),
    "wait": _("Wait (a fixed latency)"),
    "math_pipe_throttle": _("Math pipe throttle (a busy math unit)"),
    "mio_throttle": _("MIO throttle (a full memory input/output queue)"),
    "lg_throttle": _("LG throttle (a full local/global memory queue)"),
    "tex_throttle": _("TEX throttle (a full texture queue)"),
    "not_selected": _("Not selected (another warp issued)"),
    "no_instruction": _("No instruction (instruction cache)"),
    "branch_resolving": _("Branch resolving"),
    "dispatch_stall": _("Dispatch stall"),
    "drain": _("Drain (writes at the warp's end)"),
    "imc_miss": _("IMC miss (constant cache)"),
    "membar": _("Memory barrier"),
    "misc": _("Miscellaneous"),
    "sleeping": _("Sleeping"),
    "gmma": _("GMMA (waiting on a warpgroup matrix multiply, Hopper's wgmma)"),
}


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _whole(value):
    value = _number(value)
    return int(value) if value is not None and value >= 0 and float(value).is_integer() else None


def _text(value, limit=TEXT_CHARS):
    return value[:limit] if isinstance(value, str) else None


def _dims(value):
    if not isinstance(value, list) or len(value) != 3:
        return None
    numbers = [_whole(n) for n in value]
    return None if None in numbers else numbers


def _stalls(value):
    stalls = []
    for item in value[:3] if isinstance(value, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("reason"), str):
            continue
        reason = item["reason"][:40]
        stalls.append({"reason": reason, "label": str(STALL_LABELS.get(reason, reason.replace("_", " "))),
                       "share_pct": _number(item.get("share_pct")),
                       "cycles_per_instruction": _number(item.get("cycles_per_instruction"))})
    return stalls


NUMBERS = ("duration_ms", "achieved_occupancy_pct", "theoretical_occupancy_pct", "sm_pct", "memory_pct", "dram_pct",
           "l2_pct", "flops", "dram_bytes", "flop_per_s", "arithmetic_intensity")


def _kernel(value):
    kernel = {"model": value.get("model") if value.get("model") in MODELS else None,
              "launch": _whole(value.get("launch")), "name": _text(value.get("name"), NAME_CHARS) or "",
              "grid": _dims(value.get("grid")), "block": _dims(value.get("block")),
              "registers": _whole(value.get("registers")), "stalls": _stalls(value.get("stalls"))}
    kernel.update({key: _number(value.get(key)) for key in NUMBERS})
    return kernel


def _models(value):
    models = {}
    for model in MODELS:
        item = value.get(model) if isinstance(value, dict) else None
        if isinstance(item, dict):
            models[model] = {"kernels": _whole(item.get("kernels")), "duration_ms": _number(item.get("duration_ms")),
                             "capped": item.get("capped") is True}
    return models


def _report_file(value):
    if not isinstance(value, dict):
        return None
    return {"bytes": _whole(value.get("bytes")), "sha256": _text(value.get("sha256"), 64),
            "stored": value.get("stored") if isinstance(value.get("stored"), bool) else None,
            "why": _text(value.get("why"), 500)}


def report(run):
    """The run's profile report as it may be shown, or None when its result has none (not a profile run,
    not judged yet, or judged by an agent that makes no reports)."""
    profile = (run.result or {}).get("profile")
    if not isinstance(profile, dict):
        return None
    kernels = profile.get("kernels")
    return {
        "available": profile.get("available") is True,
        "tool": _text(profile.get("tool"), 40), "version": _text(profile.get("version"), 200),
        "vendor": _text(profile.get("vendor"), 40), "reason": _text(profile.get("reason")),
        "kernels_per_model": _whole(profile.get("kernels_per_model")),
        "sections": [s[:60] for s in profile.get("sections") or [] if isinstance(s, str)][:20]
        if isinstance(profile.get("sections"), list) else [],
        "clock_control": _text(profile.get("clock_control"), 40), "metrics": _text(profile.get("metrics"), 40),
        "kernels": [_kernel(k) for k in kernels[:MAX_KERNELS] if isinstance(k, dict)] if isinstance(kernels, list) else [],
        "models": _models(profile.get("models")),
        "report_file": _report_file(profile.get("report_file")),
        "duration_s": _number(profile.get("duration_s")),
    }


def device_peaks(run):
    """(peak GB/s, peak TFLOP/s) of the run's device as its agent reported them; None where unknown."""
    device = (run.result or {}).get("device") or {}
    return _number(device.get("peak_gbps")) if isinstance(device, dict) else None, \
        _number(device.get("peak_tflops")) if isinstance(device, dict) else None


def with_stored_file(shown, stored):
    """The report with what the site keeps of its file (`stored`: a ProfileFile without its content, or
    None): the agent's word on the file gives way to the site's."""
    if shown is None:
        return None
    if stored is not None:
        shown["report_file"] = {**(shown["report_file"] or {}), "bytes": stored.size, "sha256": stored.sha256,
                                "stored": True, "why": None}
    elif shown["report_file"] is not None and shown["report_file"]["stored"]:
        shown["report_file"].update(stored=False, why=None)  # the agent said sent; the site has none
    return shown


def ncu_rep_download(run, stored):
    """The kept .ncu-rep (a ProfileFile) as a download named after its run: the page's and the API's."""
    from django.http import HttpResponse

    response = HttpResponse(bytes(stored.content), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.ncu-rep"'
    return response
