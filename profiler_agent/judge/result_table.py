"""The human-readable table `judge` prints."""

from __future__ import annotations

from profiler_agent.judge.profile_table import format_profile


def _num(value, fmt: str = "{:.4g}", missing: str = "n/a") -> str:
    return missing if value is None else fmt.format(value)


def _stats_line(stats: dict) -> str:
    if stats["median_ms"] is None:
        return "not timed"
    return (
        f"median {stats['median_ms']:.4f} ms  (mean {stats['mean_ms']:.4f}, min {stats['min_ms']:.4f}, "
        f"std {stats['std_ms']:.4f}, {stats['runs']} runs)"
    )


def _correctness_line(c: dict) -> str:
    if c["passed"] is None:
        return "not checked"
    verdict = "passed" if c["passed"] else "FAILED"
    return (
        f"{verdict} ({c['trials']} trials, max abs err {_num(c['max_abs_err'], '{:.3e}')}, "
        f"max rel err {_num(c['max_rel_err'], '{:.3e}')}, atol {_num(c['atol'], '{:g}')}, "
        f"rtol {_num(c['rtol'], '{:g}')})"
    )


def _named_cases(timing: dict) -> dict:
    """The per-case figures of a reference's get_cases(); none for the single "default" case."""
    cases = timing.get("cases") or {}
    return {} if list(cases) == ["default"] else cases


def _case_rows(timing: dict) -> list[tuple[str, str]]:
    return [(f"  case {name}", f"reference {_num(f['reference_ms'], '{:.4f} ms')}, candidate "
             f"{_num(f['candidate_ms'], '{:.4f} ms')}, speedup {_num(f['speedup'], '{:.3f}x')}")
            for name, f in _named_cases(timing).items()]


def _judged_rows(part: dict) -> list[tuple[str, str]]:
    t, m, d = part["timing"], part["metrics"], part["durations_s"]
    rows = [("status", part["status"])]
    if part.get("reason"):
        rows.append(("reason", part["reason"]))
    return rows + [
        ("correctness", _correctness_line(part["correctness"])),
        ("reference", _stats_line(t["reference"])),
        ("candidate", _stats_line(t["candidate"])),
        ("speedup", _num(t["speedup"], "{:.3f}x") + ("  (geometric mean of the cases)" if _named_cases(t) else "")),
        *_case_rows(t),
        ("flops", _num(m["flops"], "{:,}") + (f"  ({m['tflops']:.3f} TFLOP/s)" if m["tflops"] else "")),
        ("bytes", _num(m["bytes"], "{:,}")),
        ("bandwidth", _num(m["bandwidth_gbs"], "{:.2f} GB/s")
         + (f"  ({m['pct_peak_bandwidth']:.1f}% of peak)" if m["pct_peak_bandwidth"] else "")),
        ("durations", ", ".join(f"{k} {_num(v, '{:.2f} s')}" for k, v in d.items())),
        ("flags", ", ".join(part["flags"]) or "none"),
    ]


def format_table(result: dict) -> str:
    dev = result["device"]
    device = f"{dev['kind']}  {dev['name'] or 'unknown'}  (torch {dev['torch']}"
    device += f", driver {dev['driver']})" if dev["driver"] else ")"
    rows = [("device", device)] + _judged_rows(result)
    for name, variant in result["variants"].items():
        rows.append((f"variant {name}", ""))
        rows += [(f"  {key}", value) for key, value in _judged_rows(variant)]
    if result["self_test"] is not None:
        rows.append(("self test", f"exit code {result['self_test']['exit_code']}"))
    width = max(len(key) for key, _ in rows)
    table = "\n".join(f"{key:<{width}}  {value}" for key, value in rows)
    return table if result.get("profile") is None else table + "\n" + format_profile(result["profile"])
