"""Ranking rules as a small registry: each rule orders a season's standings and assigns ranks.

A rule sees only materialized Standing rows. Equal keys share a rank; rows the rule
considers unscored come after every scored row (and share the last rank).
"""
from datetime import datetime, timezone

from django.db.models import Case, F, IntegerField, Q, Value, When, Window
from django.db.models.functions import Rank
from django.utils.translation import gettext_lazy as _

_RULES = {}
_FAR_FUTURE = datetime.max.replace(tzinfo=timezone.utc)


def register(cls):
    _RULES[cls.name] = cls
    return cls


def get_rule(name):
    try:
        return _RULES[name]()
    except KeyError:
        raise ValueError(f"unknown ranking rule {name!r}; known: {', '.join(sorted(_RULES))}")


def rule_names():
    return sorted(_RULES)


class RankingRule:
    name = ""
    label = ""
    # Columns shown on the leaderboard for this rule, in order.
    columns = ()
    # (Standing field, descending?) in priority order: the same order as sort_key, for the database.
    order_fields = ()

    def is_scored(self, standing) -> bool:
        raise NotImplementedError

    def scored_q(self):
        """The database twin of is_scored."""
        raise NotImplementedError

    def sort_key(self, standing):
        raise NotImplementedError

    def rank_window(self):
        """RANK() over the rule's order, scored rows first; unscored rows tie on constant keys and share the last rank."""
        scored = self.scored_q()
        keys = [Case(When(scored, then=Value(1)), default=Value(0), output_field=IntegerField()).desc()]
        for field, descending in self.order_fields:
            key = Case(When(scored, then=F(field)), default=Value(None))
            keys.append(key.desc(nulls_last=True) if descending else key.asc(nulls_last=True))
        return Window(expression=Rank(), order_by=keys)

    def assign_ranks(self, standings):
        """Sets `.rank` on each standing (a list) and returns them in rank order."""
        scored = sorted((s for s in standings if self.is_scored(s)), key=self.sort_key)
        unscored = sorted((s for s in standings if not self.is_scored(s)), key=lambda s: s.contestant_id)
        rank, previous = 0, object()
        for position, standing in enumerate(scored, start=1):
            key = self.sort_key(standing)
            if key != previous:
                rank, previous = position, key
            standing.rank = rank
        last = len(scored) + 1
        for standing in unscored:
            standing.rank = last
        return scored + unscored


@register
class AcceptedCountRule(RankingRule):
    """GPUCodeForces S1 (seed 001): accepted count, then base score, then bonus."""

    name = "accepted_count"
    label = _("Accepted count, then base score, then bonus")
    columns = ("accepted_count", "base_score", "bonus")
    order_fields = (("accepted_count", True), ("base_score", True), ("bonus", True))

    def is_scored(self, standing):
        return standing.accepted_count > 0

    def scored_q(self):
        return Q(accepted_count__gt=0)

    def sort_key(self, standing):
        return (-standing.accepted_count, -standing.base_score, -standing.bonus)


@register
class CumulativeScoreRule(RankingRule):
    """GPUKernelContest (seed 000): total score, then more submissions, then earlier."""

    name = "cumulative_score"
    label = _("Score, then more submissions, then earlier submission")
    columns = ("total_score", "submission_count", "first_submission_at")
    order_fields = (("total_score", True), ("submission_count", True), ("first_submission_at", False))

    def is_scored(self, standing):
        return standing.total_score > 0

    def scored_q(self):
        return Q(total_score__gt=0)

    def sort_key(self, standing):
        return (-standing.total_score, -standing.submission_count, standing.first_submission_at or _FAR_FUTURE)


class GpuSpeedupRule(RankingRule):
    """Per GPU type: accepted samples that passed there, then their geometric-mean speedup."""

    name = "gpu_speedup"
    label = _("Accepted samples passed on this GPU, then geometric-mean speedup")
    order_fields = (("passed_count", True), ("geomean_speedup", True))

    def is_scored(self, standing):
        return standing.passed_count > 0

    def scored_q(self):
        return Q(passed_count__gt=0)

    def sort_key(self, standing):
        return (-standing.passed_count, -(standing.geomean_speedup or 0))
