"""Read-side queries of the public pages: standings are read as materialized, never recomputed here."""
from django.db.models import Count, Q

from submissions.models import Issue, Season, Standing, Verdict
from submissions.ranking import get_rule


def current_season():
    return Season.objects.order_by("-starts_at").first()


def season_standings(season, *, offset=0, limit=50):
    rows = (
        Standing.objects.filter(season=season)
        .select_related("contestant")
        .order_by("rank", "contestant_id")[offset:offset + limit]
    )
    return list(rows)


def season_issues(season):
    return (
        Issue.objects.filter(season=season)
        .select_related("author")
        .annotate(
            submission_count=Count("submissions", distinct=True),
            passed_runs=Count("submissions__runs", filter=Q(submissions__runs__verdict=Verdict.PASSED), distinct=True),
        )
        .order_by("created_at")
    )


def rule_of(season):
    return get_rule(season.ranking_rule)
