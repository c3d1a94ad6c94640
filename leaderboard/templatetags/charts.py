"""`{% submission_charts submission %}`: the charts of a submission's runs, for any page that shows one
(the page loads static/js/charts.js, which loads plotly.js when a chart needs it)."""
from django import template

from leaderboard import charts, selectors
from submissions.rules import timing_flags

register = template.Library()


@register.inclusion_tag("leaderboard/_submission_charts.html")
def submission_charts(submission, runs=None):
    runs = ([r for r in runs if r.result and not timing_flags.is_provisional(r)] if runs is not None
            else selectors.judged_runs(submission))
    return charts.submission_figures(submission, runs)
