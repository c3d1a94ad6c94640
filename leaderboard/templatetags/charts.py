"""`{% submission_charts submission %}`: the charts of a submission's runs, for any page that shows one."""
from django import template

from leaderboard import charts

register = template.Library()


@register.inclusion_tag("leaderboard/_submission_charts.html")
def submission_charts(submission, runs=None):
    runs = list(runs if runs is not None else submission.runs.select_related("gpu_type").filter(result__isnull=False))
    runs = [r for r in runs if r.result]
    figures = {
        "latency": charts.latency(runs),
        "roofline": charts.roofline(runs),
        "telemetry": charts.telemetry_trace(runs),
    }
    return {"figures": {name: fig for name, fig in figures.items() if fig["data"]}, "runs": runs,
            "prefix": f"submission-{submission.pk}"}
