"""A profile run's report as `gpucf profile RUN` prints it: a line per kernel, from the API's JSON."""
from gpucf.render import NONE, clip, table

NAME_COLUMNS = 44
HEADERS = ["model", "kernel", "µs", "grid", "block", "regs", "occ %", "SM %", "DRAM %", "L2 %", "top stalls",
           "GFLOP/s", "FLOP/B"]
NUMBERS = ("µs", "regs", "occ %", "SM %", "DRAM %", "L2 %", "GFLOP/s", "FLOP/B")


def _number(value, fmt):
    return NONE if value is None else fmt.format(value)


def _dims(value):
    return "x".join(str(n) for n in value) if value else NONE


def _stalls(stalls):
    return ", ".join(f"{s['reason']} {s['share_pct']:.0f}%" for s in stalls if s.get("share_pct") is not None) or NONE


def kernel_row(kernel):
    return [kernel["model"] or NONE, clip(kernel["name"], NAME_COLUMNS),
            _number(kernel["duration_ms"] * 1e3 if kernel["duration_ms"] is not None else None, "{:.2f}"),
            _dims(kernel["grid"]), _dims(kernel["block"]), _number(kernel["registers"], "{}"),
            _number(kernel["achieved_occupancy_pct"], "{:.1f}"), _number(kernel["sm_pct"], "{:.1f}"),
            _number(kernel["dram_pct"], "{:.1f}"), _number(kernel["l2_pct"], "{:.1f}"), _stalls(kernel["stalls"]),
            _number(kernel["flop_per_s"] / 1e9 if kernel["flop_per_s"] is not None else None, "{:.1f}"),
            _number(kernel["arithmetic_intensity"], "{:.3f}")]


def profile(answer):
    """The report's head (run, GPU, verdict, tool), then its kernels, models and file."""
    lines = [f"Profile of run #{answer['run']} (submission #{answer['submission']}) on {answer['gpu_type']}"
             + (f", {answer['device']}" if answer["device"] else "")
             + (f"; asked for from run #{answer['profile_of']}" if answer["profile_of"] else "")]
    report = answer["report"]
    if answer["status"] != "done":
        return "\n".join(lines + [f"Not judged yet ({answer['status']}): `gpucf profile {answer['run']}` again later."])
    lines.append(f"Correctness trials: {answer['verdict']}")
    if report is None:
        return "\n".join(lines + ["No profile report: the agent that judged this run made none."])
    if report["tool"] and report["available"]:
        lines.append(f"Profiled with {report['tool']} {report['version'] or ''}".rstrip()
                     + (f", at most {report['kernels_per_model']} kernels per model" if report["kernels_per_model"] else ""))
    if report["reason"]:
        lines += report["reason"].splitlines()
    if report["kernels"]:
        lines += ["", table(HEADERS, [kernel_row(k) for k in report["kernels"]], right=NUMBERS), ""]
    for model in ("candidate", "reference"):
        summary = report["models"].get(model)
        if summary:
            total = f", {summary['duration_ms'] * 1e3:.2f} µs in all" if summary.get("duration_ms") is not None else ""
            capped = " (capped: it may launch more)" if summary.get("capped") else ""
            lines.append(f"{model}: {summary.get('kernels')} kernels{total}{capped}")
    stored = report["report_file"]
    if stored and stored.get("url"):
        lines.append(f".ncu-rep ({stored['bytes']:,} bytes): {stored['url']}")
    elif stored and stored.get("why"):
        lines.append(f".ncu-rep not kept on the site: {stored['why']}")
    return "\n".join(lines)
