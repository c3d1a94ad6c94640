"""A profile report as the text table `judge --mode profile` prints: one line per kernel."""

from __future__ import annotations

NAME_CHARS = 40
COLUMNS = ("model", "kernel", "ms", "grid", "block", "regs", "occ %", "SM %", "DRAM %", "L2 %", "top stall",
           "GFLOP/s", "FLOP/B")


def _number(value, fmt: str) -> str:
    return "—" if value is None else fmt.format(value)


def _dims(value) -> str:
    return "×".join(str(n) for n in value) if value else "—"


def _name(text: str) -> str:
    return text if len(text) <= NAME_CHARS else text[:NAME_CHARS - 1] + "…"


def _stall(stalls: list) -> str:
    return f"{stalls[0]['reason']} {stalls[0]['share_pct']:.0f}%" if stalls else "—"


def kernel_row(kernel: dict) -> list[str]:
    return [kernel["model"] or "?", _name(kernel["name"]), _number(kernel["duration_ms"], "{:.4f}"),
            _dims(kernel["grid"]), _dims(kernel["block"]), _number(kernel["registers"], "{}"),
            _number(kernel["achieved_occupancy_pct"], "{:.1f}"), _number(kernel["sm_pct"], "{:.1f}"),
            _number(kernel["dram_pct"], "{:.1f}"), _number(kernel["l2_pct"], "{:.1f}"), _stall(kernel["stalls"]),
            _number(kernel["flop_per_s"] / 1e9 if kernel["flop_per_s"] is not None else None, "{:.1f}"),
            _number(kernel["arithmetic_intensity"], "{:.2f}")]


def format_profile(profile: dict | None) -> str:
    """The kernels' table, or the line saying why there is none."""
    if profile is None:
        return "profile: none (not a profile run)"
    head = f"profile: {profile['tool'] or 'no profiler'}" + (f" ({profile['version']})" if profile["version"] else "")
    lines = [head]
    if profile["reason"]:
        lines += [f"  {line}" for line in profile["reason"].splitlines()]
    if profile["kernels"]:
        rows = [list(COLUMNS)] + [kernel_row(kernel) for kernel in profile["kernels"]]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    for model, summary in sorted(profile["models"].items()):
        cut = ", capped: the model may launch more" if summary["capped"] else ""
        total = f", {summary['duration_ms']:.4f} ms" if summary["duration_ms"] is not None else ""
        lines.append(f"  {model}: {summary['kernels']} kernels{total}{cut}")
    if profile["report_file"]:
        lines.append(f"  report: {profile['report_file']['name']} ({profile['report_file']['bytes']:,} bytes)")
    return "\n".join(lines)
