"""`{% submission_charts submission %}`: the charts of a submission's runs, for any page that shows one;
`{% profile_roofline kernels peak_gbps peak_tflops %}`: a profile report's roofline (the page loads
static/js/charts.js, which loads plotly.js when a chart needs it)."""
from django import template

from leaderboard import charts, selectors
from submissions.rules import timing_flags

register = template.Library()


@register.inclusion_tag("leaderboard/_submission_charts.html")
def submission_charts(submission, runs=None):
    """`runs`: the submission's runs the viewer is shown (left out: those the public is, judged_runs)."""
    runs = ([r for r in runs if r.result and not timing_flags.is_provisional(r)] if runs is not None
            else selectors.judged_runs(submission))
    return charts.submission_figures(submission, runs)


@register.inclusion_tag("leaderboard/_profile_roofline.html")
def profile_roofline(kernels, peak_gbps=None, peak_tflops=None):
    """The kernels of a profile report (submissions.profile_reports) on a roofline, or a line saying why not."""
    figure = charts.profile_roofline(kernels, peak_gbps, peak_tflops)
    return {"figures": {"roofline": figure} if figure else {}, "roofs": bool(peak_gbps)}
