"""Plotly figure specs (plain dicts, drawn by the vendored plotly.js) for the public pages.

Plotly reads a subset of HTML in every label, legend entry and hover text: text from users (issue
titles, GPU names) goes through `_text`, so it shows as written and never becomes markup."""
import html
import math
import textwrap
from collections import defaultdict
from datetime import timedelta

from django.utils.translation import gettext as _

# A time axis spans its points and a tenth of their span on each side, at least this much (one point:
# plotly's own range is a millisecond wide, with sub-millisecond ticks; a fixed day-wide axis drew
# acceptances minutes apart as one vertical line).
MIN_TIME_PAD = timedelta(minutes=5)
# Up to this count a count axis ticks every 1 (plotly's own ticks below ~5 are 0.5 apart); above,
# plotly's steps are whole numbers and the format keeps them so.
COUNT_AXIS_UNIT_TICKS = 10
SPEEDUP_BINS = 12  # about this many bars in the speedup histogram
MATRIX_LABEL_CHARS = 40  # a sample's title on the heatmap's axis, shortened beyond
HOVER_LINE_CHARS = 60  # a hover text's lines (titles hold up to 200 characters)


def _text(value):
    """User text for a plotly label: escaped, so `<b>` stays two characters and a letter."""
    return html.escape(str(value), quote=False)


def _count_axis(title, max_count):
    """A y axis of counts: whole-number ticks only."""
    axis = {"title": {"text": title}, "rangemode": "tozero", "tickformat": "d"}
    if max_count <= COUNT_AXIS_UNIT_TICKS:
        axis.update(tick0=0, dtick=1)
    return axis


def _time_axis(times):
    """A date axis from the first point to the last (sorted), with a margin of a tenth of their span on
    each side and at least MIN_TIME_PAD: points minutes apart stand apart, a single point has ticks of
    minutes."""
    axis = {"type": "date"}
    if times:
        pad = max((times[-1] - times[0]) / 10, MIN_TIME_PAD)
        axis["range"] = [(times[0] - pad).isoformat(), (times[-1] + pad).isoformat()]
    return axis


def _nice_step(rough):
    """The smallest of 1, 2, 2.5, 5 x 10^n not below `rough` (> 0)."""
    power = 10 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= rough * (1 - 1e-9))


def _layout(title, **extra):
    layout = {"title": {"text": title}, "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "height": 360}
    layout.update(extra)
    return layout


def accepted_over_time(hardware_rows):
    times = sorted(row["accepted_at"] for row in hardware_rows)
    return {
        "data": [{"type": "scatter", "mode": "lines+markers", "line": {"shape": "hv"},
                  "x": [t.isoformat() for t in times], "y": list(range(1, len(times) + 1)), "name": _("accepted")}],
        "layout": _layout(_("Accepted samples over time"), xaxis=_time_axis(times),
                          yaxis=_count_axis(_("accepted samples"), len(times))),
    }


def _speedup_bins(values):
    """(start, size) of bins shared by every GPU type's bars: about SPEEDUP_BINS over the values' span."""
    low, high = min(values), max(values)
    size = _nice_step(max(high - low, 0.1 * max(abs(high), 1.0)) / SPEEDUP_BINS)
    return math.floor(low / size) * size, size


def speedup_distribution(speedups):
    """A histogram whose bins are counted here, so the count axis knows its largest bar."""
    by_gpu = defaultdict(list)
    for gpu, value in speedups:
        by_gpu[gpu].append(value)
    if not by_gpu:
        return {"data": [], "layout": _layout(_("Ranked speedups of submissions"))}
    start, size = _speedup_bins([v for values in by_gpu.values() for v in values])
    data, tallest = [], 0
    for gpu, values in sorted(by_gpu.items()):
        counts = defaultdict(int)
        for value in values:
            counts[math.floor((value - start) / size + 1e-9)] += 1
        bins = sorted(counts)
        tallest = max(tallest, *counts.values())
        lows = [start + i * size for i in bins]
        data.append({"type": "bar", "name": _text(gpu), "opacity": 0.75, "width": size,
                     "x": [low + size / 2 for low in lows], "y": [counts[i] for i in bins],
                     "customdata": [f"{low:.3g}–{low + size:.3g}×" for low in lows],
                     "hovertemplate": "%{customdata}: %{y}"})
    return {
        "data": data,
        # one ranked figure per submission and GPU type (ranked_runs), however often it was judged
        "layout": _layout(_("Ranked speedups of submissions"), barmode="overlay", bargap=0,
                          xaxis={"title": {"text": _("speedup (×)")}}, yaxis=_count_axis(_("submissions"), tallest)),
    }


def _shortened(text, limit):
    """`text` in at most `limit` characters: cut with an ellipsis when longer."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _wrapped(text, width):
    """`text` escaped, in lines of at most `width` characters (at spaces where it has them), joined by
    <br>: plotly never wraps a hover text, and a 200-character title ran off the chart."""
    return "<br>".join(_text(line) for line in textwrap.wrap(str(text), width)) or _text(text)


def hardware_matrix(gpu_types, rows):
    """The speedup heatmap: a sample's title shortened on the axis (the label takes the chart's width
    from its cells), whole in the hover text."""
    labels = [f"{_text(_shortened(r['submission'].issue.title, MATRIX_LABEL_CHARS))} #{r['submission'].pk}"
              for r in rows]
    hovers = [f"{_wrapped(r['submission'].issue.title, HOVER_LINE_CHARS)} #{r['submission'].pk}" for r in rows]
    z = [[cell.speedup if cell and cell.speedup else None for cell in r["cells"]] for r in rows]
    # the colours span the values and 1× (parity): plotly's own range around a single value (3.3 to 4
    # for 3.65) said nothing, and 1× anchors what "faster" looks like
    values = [value for line in z for value in line if value is not None] + [1.0]
    return {
        "data": [{"type": "heatmap", "x": [_text(g.name) for g in gpu_types], "y": labels, "z": z,
                  "text": [[hover] * len(gpu_types) for hover in hovers],
                  "hovertemplate": "%{text}<br>%{x}: %{z:.2f}×<extra></extra>",
                  "zmin": min(values), "zmax": max(max(values), min(values) + 1.0),
                  "colorscale": "Viridis", "colorbar": {"title": {"text": _("speedup ×")}}, "hoverongaps": False}],
        "layout": _layout(_("Speedup of each accepted sample on each GPU type"), height=max(300, 60 + 28 * len(rows)),
                          yaxis={"automargin": True}),
    }


def gpu_ratios(comparison):
    """Per sample, b's candidate time over a's (log y) against a's time (log x); 1 is drawn as a line."""
    a, b, rows = comparison["a"], comparison["b"], comparison["rows"]
    times = [r["a_ms"] for r in rows]
    line = [min(times), max(times)] if times else []
    return {
        "data": [{"type": "scatter", "mode": "markers", "name": _("samples"), "x": times, "y": [r["ratio"] for r in rows],
                  "text": [_text(r["sample"]) for r in rows], "marker": {"size": 9},
                  "hovertemplate": "%{text}<br>%{x:.4g} ms · %{y:.3g}×<extra></extra>"},
                 {"type": "scatter", "mode": "lines", "name": _("same time"), "x": line, "y": [1, 1] if line else [],
                  "line": {"dash": "dot", "color": "#888"}, "hoverinfo": "skip"}],
        "layout": _layout(_("Candidate time ratio b / a, per sample"),
                          showlegend=False,
                          xaxis={"type": "log", "title": {"text": _("candidate ms on %(gpu)s") % {"gpu": _text(a.name)}}},
                          yaxis={"type": "log", "title": {"text": _("time ratio %(b)s / %(a)s") % {"a": _text(a.name),
                                                                                                  "b": _text(b.name)}}}),
    }


def gpu_roofline_position(gpus):
    """Each GPU's median achieved share of its peak compute against its share of peak bandwidth."""
    data = []
    for gpu in gpus:
        roof = gpu.roofline or {}
        if roof.get("tflops_pct") is None or roof.get("gbps_pct") is None:
            continue
        data.append({"type": "scatter", "mode": "markers+text", "name": _text(gpu.name), "x": [roof["gbps_pct"]],
                     "y": [roof["tflops_pct"]], "text": [_text(gpu.name)], "textposition": "top center",
                     "marker": {"size": 12}})
    return {"data": data, "layout": _layout(
        _("Roofline position: median share of each GPU's peaks"),
        xaxis={"title": {"text": _("share of peak bandwidth")}, "rangemode": "tozero", "ticksuffix": "%"},
        yaxis={"title": {"text": _("share of peak compute")}, "rangemode": "tozero", "ticksuffix": "%"})}


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
                x += [_text(run.gpu_type.name)] * len(values)
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
            x.append(_text(run.gpu_type.name))
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
        data.append({"type": "scatter", "mode": "markers", "marker": {"size": 12}, "name": _text(run.gpu_type.name),
                     "x": [intensity], "y": [tflops]})
        peak_gbps, peak_tflops = device.get("peak_gbps"), device.get("peak_tflops")
        if peak_gbps and peak_tflops:
            ridge = peak_tflops * 1000 / peak_gbps
            xs = [min(intensity, ridge) / 100, ridge, max(intensity, ridge) * 100]
            ys = [min(peak_gbps * x / 1000, peak_tflops) for x in xs]
            data.append({"type": "scatter", "mode": "lines", "name": _("roof") + f" · {_text(run.gpu_type.name)}", "x": xs, "y": ys,
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
        data.append({"type": "scatter", "mode": "lines", "name": _("power W") + f" · {_text(run.gpu_type.name)}", "x": t,
                     "y": [p.get("power_w") for p in trace]})
        data.append({"type": "scatter", "mode": "lines", "name": _("SM MHz") + f" · {_text(run.gpu_type.name)}", "x": t,
                     "y": [p.get("sm_clock_mhz") for p in trace], "yaxis": "y2"})
    return {"data": data, "layout": _layout(_("Power and clock during timing"), xaxis={"title": {"text": "s"}},
                                            yaxis={"title": {"text": "W"}},
                                            yaxis2={"title": {"text": "MHz"}, "overlaying": "y", "side": "right"})}


def batched_figure(run):
    """The candidate's per-call time in batches of back-to-back calls, beside its per-call median; None
    without one. Batches slower than single calls (a busy host, colder caches) measure no overhead:
    `slower` then, and no share (the agent's is 0% there, which read as "no overhead")."""
    stats = ((run.result or {}).get("timing") or {}).get("candidate") or {}
    batched, median = stats.get("batched_ms"), stats.get("median_ms")
    if batched is None:
        return None
    slower = median is not None and batched > median
    return {"ms": batched, "median_ms": median, "slower": slower,
            "overhead_pct": None if slower else stats.get("overhead_pct")}


def submission_figures(submission, runs):
    """The context of templates/leaderboard/_submission_charts.html: a submission's charts, from its
    judged runs, and the rows of the table of the same numbers (each run with its batched figure)."""
    figures = {"latency": latency(runs), "roofline": roofline(runs), "telemetry": telemetry_trace(runs)}
    rows = [{"run": run, "batched": batched_figure(run)} for run in runs]
    return {"figures": {name: fig for name, fig in figures.items() if fig["data"]}, "rows": rows,
            "any_batched_slower": any(row["batched"] and row["batched"]["slower"] for row in rows),
            "prefix": f"submission-{submission.pk}"}


def speedup_by_version(gpu_types, rows):
    """One contestant's versions of an issue (submissions.version_comparison): each GPU type's speedup
    per version, as a line; a provisional figure is an open marker; 1× (the reference's speed) dotted."""
    labels = [f"v{row['version']}" for row in rows]
    data = []
    for column, gpu_type in enumerate(gpu_types):
        cells = [row["cells"][column] for row in rows]
        data.append({
            "type": "scatter", "mode": "lines+markers", "name": _text(gpu_type.name), "x": labels, "connectgaps": True,
            "y": [cell.speedup if cell else None for cell in cells],
            "marker": {"size": 9,
                       "symbol": ["circle-open" if cell and cell.provisional else "circle" for cell in cells]},
            "customdata": [f"#{row['submission'].pk}" + (" · " + _("provisional") if cell and cell.provisional else "")
                           for row, cell in zip(rows, cells)],
            "hovertemplate": "%{x} %{customdata}: %{y:.2f}×"})
    return {"data": data, "layout": _layout(
        _("Speedup of each of your versions"),
        xaxis={"type": "category", "title": {"text": _("version")}},
        yaxis={"title": {"text": _("speedup (×)")}, "rangemode": "tozero"},
        shapes=[{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                 "line": {"dash": "dot", "color": "#888", "width": 1}}])}


PROFILE_NAME_CHARS = 80  # a kernel's name in the roofline's hover text (C++ signatures run long)


def profile_roofline(kernels, peak_gbps=None, peak_tflops=None):
    """A profile report's kernels on a roofline: achieved GFLOP/s against FLOP per DRAM byte (log-log), one
    trace per model, under the device's roofs where its agent knew its peaks. None when no kernel has both
    figures (no FLOP count: tensor-core or integer work alone, or a profiler that counted none)."""
    placed = [k for k in kernels if k.get("arithmetic_intensity") and k.get("flop_per_s")]
    data = []
    for model, label in (("candidate", _("candidate")), ("reference", _("reference")), (None, _("kernels"))):
        points = [k for k in placed if k.get("model") == model]
        if points:
            data.append({"type": "scatter", "mode": "markers", "name": label, "marker": {"size": 10},
                         "x": [k["arithmetic_intensity"] for k in points], "y": [k["flop_per_s"] / 1e9 for k in points],
                         "text": [_text(_shortened(k["name"], PROFILE_NAME_CHARS)) for k in points],
                         "hovertemplate": "%{text}<br>%{x:.3g} FLOP/B · %{y:.4g} GFLOP/s<extra></extra>"})
    if not data:
        return None
    if peak_gbps:
        intensities = [k["arithmetic_intensity"] for k in placed]
        ridge = peak_tflops * 1000 / peak_gbps if peak_tflops else None
        xs = sorted({min(intensities) / 10, max(intensities) * 10, *([ridge] if ridge else [])})
        ys = [min(peak_gbps * x, peak_tflops * 1000) if peak_tflops else peak_gbps * x for x in xs]
        data.append({"type": "scatter", "mode": "lines", "name": _("roof"), "x": xs, "y": ys,
                     "line": {"dash": "dot", "color": "#888"}, "hoverinfo": "skip"})
    return {"data": data, "layout": _layout(_("Roofline: each kernel's achieved FLOP/s"),
                                            xaxis={"type": "log", "title": {"text": _("FLOP / DRAM byte")}},
                                            yaxis={"type": "log", "title": {"text": "GFLOP/s"}})}
