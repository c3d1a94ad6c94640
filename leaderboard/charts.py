"""Plotly figure specs (plain dicts, drawn by the vendored plotly.js) for the public pages."""
from collections import defaultdict

from django.utils.translation import gettext as _


def _layout(title, **extra):
    layout = {"title": {"text": title}, "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "height": 360}
    layout.update(extra)
    return layout


def accepted_over_time(hardware_rows):
    times = sorted(row["accepted_at"] for row in hardware_rows)
    return {
        "data": [{"type": "scatter", "mode": "lines+markers", "line": {"shape": "hv"},
                  "x": [t.isoformat() for t in times], "y": list(range(1, len(times) + 1)), "name": _("accepted")}],
        "layout": _layout(_("Accepted samples over time"), yaxis={"title": {"text": _("accepted samples")}, "rangemode": "tozero"}),
    }


def speedup_distribution(speedups):
    by_gpu = defaultdict(list)
    for gpu, value in speedups:
        by_gpu[gpu].append(value)
    return {
        "data": [{"type": "histogram", "x": values, "name": gpu, "opacity": 0.75} for gpu, values in sorted(by_gpu.items())],
        # one ranked figure per submission and GPU type (ranked_runs), however often it was judged
        "layout": _layout(_("Ranked speedups of submissions"), barmode="overlay",
                          xaxis={"title": {"text": _("speedup (×)")}}, yaxis={"title": {"text": _("submissions")}}),
    }


def hardware_matrix(gpu_types, rows):
    labels = [f"{r['submission'].issue.title[:24]} #{r['submission'].pk}" for r in rows]
    z = [[cell.speedup if cell and cell.speedup else None for cell in r["cells"]] for r in rows]
    return {
        "data": [{"type": "heatmap", "x": [g.name for g in gpu_types], "y": labels, "z": z,
                  "colorscale": "Viridis", "colorbar": {"title": {"text": _("speedup ×")}}, "hoverongaps": False}],
        "layout": _layout(_("Speedup of each accepted sample on each GPU type"), height=max(300, 60 + 28 * len(rows)),
                          yaxis={"automargin": True}),
    }


def _side_name(side):
    return _("reference") if side == "reference" else _("candidate")


def latency(runs):
    """Reference and candidate time per GPU type: box plots of the per-call times where the agent
    sent them, else median bars with ±std."""
    sampled = [run for run in runs if ((run.result or {}).get("timing") or {}).get("samples")]
    if sampled:
        data = []
        for side in ("reference", "candidate"):
            x, y = [], []
            for run in sampled:
                values = run.result["timing"]["samples"].get(side) or []
                x += [run.gpu_type.name] * len(values)
                y += values
            if y:
                data.append({"type": "box", "name": _side_name(side), "x": x, "y": y, "boxpoints": False})
        return {"data": data, "layout": _layout(_("Latency per call (ms)"), boxmode="group",
                                                yaxis={"title": {"text": "ms"}, "rangemode": "tozero"})}
    data = []
    for side in ("reference", "candidate"):
        x, median, error = [], [], []
        for run in runs:
            stats = ((run.result or {}).get("timing") or {}).get(side) or {}
            if stats.get("median_ms") is None:
                continue
            x.append(run.gpu_type.name)
            median.append(stats["median_ms"])
            error.append(stats.get("std_ms") or 0)
        if x:
            data.append({"type": "bar", "name": _side_name(side), "x": x, "y": median,
                         "error_y": {"type": "data", "array": error, "visible": True}})
    return {"data": data, "layout": _layout(_("Latency (median ± std, ms)"), barmode="group",
                                            yaxis={"title": {"text": "ms"}, "rangemode": "tozero"})}


def roofline(runs):
    """Achieved FLOP/s against arithmetic intensity, under each device's bandwidth and compute roofs."""
    data = []
    for run in runs:
        result = run.result or {}
        metrics, device = result.get("metrics") or {}, result.get("device") or {}
        flops, nbytes, tflops = metrics.get("flops"), metrics.get("bytes"), metrics.get("tflops")
        if not (flops and nbytes and tflops):
            continue
        intensity = flops / nbytes
        data.append({"type": "scatter", "mode": "markers", "marker": {"size": 12}, "name": f"{run.gpu_type.name}",
                     "x": [intensity], "y": [tflops]})
        peak_gbps, peak_tflops = device.get("peak_gbps"), device.get("peak_tflops")
        if peak_gbps and peak_tflops:
            ridge = peak_tflops * 1000 / peak_gbps
            xs = [min(intensity, ridge) / 100, ridge, max(intensity, ridge) * 100]
            ys = [min(peak_gbps * x / 1000, peak_tflops) for x in xs]
            data.append({"type": "scatter", "mode": "lines", "name": _("roof") + f" · {run.gpu_type.name}", "x": xs, "y": ys,
                         "line": {"dash": "dot"}})
    return {"data": data, "layout": _layout(_("Roofline"), xaxis={"type": "log", "title": {"text": _("FLOP / byte")}},
                                            yaxis={"type": "log", "title": {"text": "TFLOP/s"}})}


def telemetry_trace(runs):
    """Power and SM clock over the timed region, where the agent sampled a trace."""
    data = []
    for run in runs:
        trace = ((run.result or {}).get("telemetry") or {}).get("trace") or []
        if not trace:
            continue
        t = [p.get("t_s") for p in trace]
        data.append({"type": "scatter", "mode": "lines", "name": _("power W") + f" · {run.gpu_type.name}", "x": t,
                     "y": [p.get("power_w") for p in trace]})
        data.append({"type": "scatter", "mode": "lines", "name": _("SM MHz") + f" · {run.gpu_type.name}", "x": t,
                     "y": [p.get("sm_clock_mhz") for p in trace], "yaxis": "y2"})
    return {"data": data, "layout": _layout(_("Power and clock during timing"), xaxis={"title": {"text": "s"}},
                                            yaxis={"title": {"text": "W"}},
                                            yaxis2={"title": {"text": "MHz"}, "overlaying": "y", "side": "right"})}
