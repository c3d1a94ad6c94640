"""Ranking rules as a small registry: each rule orders a season's standings and assigns ranks.

A rule sees only materialized Standing rows. Equal keys share a rank; rows the rule
considers unscored come after every scored row (and share the last rank).

Each rule declares its per-season settings (`Setting`s) and validates a season's
`ranking_settings` against them: unknown keys and wrong types are refused with a message
that names the setting, so the admin and the services can show it as it is.
"""
from dataclasses import dataclass
from datetime import datetime, timezone

from django.db.models import Case, F, IntegerField, Q, Value, When, Window
from django.db.models.functions import Rank
from django.utils.translation import gettext, gettext_lazy as _

_RULES = {}
_FAR_FUTURE = datetime.max.replace(tzinfo=timezone.utc)


class RankingSettingsError(ValueError):
    """A ranking rule or its settings are unusable; the message (translated) names what is at fault."""


def register(cls):
    _RULES[cls.name] = cls
    return cls


def get_rule(name, settings=None):
    """The rule `name` with `settings` validated; RankingSettingsError when either is unusable."""
    try:
        cls = _RULES[name]
    except KeyError:
        raise RankingSettingsError(gettext("unknown ranking rule '%(name)s'; known: %(known)s")
                                   % {"name": name, "known": ", ".join(sorted(_RULES))})
    return cls(settings)


def rule_of(season):
    """The season's rule with the season's settings."""
    return get_rule(season.ranking_rule, season.ranking_settings)


def rule_names():
    return sorted(_RULES)


def settings_catalog():
    """(rule name, rule label, [Setting, ...]) of every rule that has settings, for organizers' forms."""
    return [(name, _RULES[name].label, list(_RULES[name].settings_spec))
            for name in rule_names() if _RULES[name].settings_spec]


_TYPE_NAMES = {bool: _("true or false"), int: _("a whole number")}


@dataclass(frozen=True)
class Setting:
    key: str
    type: type
    default: object
    help: str

    def clean(self, value):
        # JSON true/false are bools, and bool is an int in Python: check exactly.
        if type(value) is not self.type:
            raise RankingSettingsError(
                gettext("the ranking setting '%(key)s' must be %(type)s, not %(value)s")
                % {"key": self.key, "type": _TYPE_NAMES[self.type], "value": _json_text(value)})
        return value


def _json_text(value):
    import json

    return json.dumps(value, ensure_ascii=False)


class RankingRule:
    name = ""
    label = ""
    # Columns shown on the leaderboard for this rule, in order.
    columns = ()
    # The settings a season may give this rule.
    settings_spec = ()

    def __init__(self, settings=None):
        self.settings = self.clean_settings(settings)

    @property
    def summary(self):
        """The order in words, as the season's settings make it."""
        return self.label

    @classmethod
    def clean_settings(cls, raw):
        """Every declared setting's value (defaults filled in), or RankingSettingsError."""
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise RankingSettingsError(gettext("the ranking settings must be a JSON object, like {}"))
        known = {s.key: s for s in cls.settings_spec}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            allowed = ", ".join(known) or gettext("none")
            raise RankingSettingsError(
                gettext("unknown ranking settings for %(rule)s: %(keys)s; allowed: %(allowed)s")
                % {"rule": cls.name, "keys": ", ".join(unknown), "allowed": allowed})
        return {key: setting.clean(raw[key]) if key in raw else setting.default for key, setting in known.items()}

    @property
    def order_fields(self):
        """(Standing field, descending?) in priority order: the same order as sort_key, for the database."""
        raise NotImplementedError

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
    settings_spec = (
        Setting("bonus_breaks_ties", bool, True,
                _("Bonus points separate contestants with the same accepted count and base score; "
                  "false: they share the rank.")),
    )

    @property
    def summary(self):
        if self.settings["bonus_breaks_ties"]:
            return self.label
        return _("Accepted count, then base score (bonus does not break ties)")

    @property
    def order_fields(self):
        fields = [("accepted_count", True), ("base_score", True)]
        if self.settings["bonus_breaks_ties"]:
            fields.append(("bonus", True))
        return tuple(fields)

    def is_scored(self, standing):
        return standing.accepted_count > 0

    def scored_q(self):
        return Q(accepted_count__gt=0)

    def sort_key(self, standing):
        key = (-standing.accepted_count, -standing.base_score)
        return key + (-standing.bonus,) if self.settings["bonus_breaks_ties"] else key


@register
class CumulativeScoreRule(RankingRule):
    """GPUKernelContest (seed 000): total score, then more submissions, then earlier."""

    name = "cumulative_score"
    label = _("Score, then more submissions, then earlier submission")
    settings_spec = (
        Setting("bonus_in_score", bool, True,
                _("The score is base points plus bonus; false: rank by base points and let the bonus only "
                  "separate equal base points (seed 000's note).")),
        Setting("more_submissions_first", bool, True,
                _("On equal scores, more submissions rank first (seed 000's rule); false: go straight to the "
                  "earlier first submission.")),
    )

    @property
    def columns(self):
        score = ("total_score",) if self.settings["bonus_in_score"] else ("base_score", "bonus")
        return score + ("submission_count", "first_submission_at")

    @property
    def summary(self):
        return {
            (True, True): self.label,
            (True, False): _("Score, then earlier submission"),
            (False, True): _("Base score, then bonus, then more submissions, then earlier submission"),
            (False, False): _("Base score, then bonus, then earlier submission"),
        }[(self.settings["bonus_in_score"], self.settings["more_submissions_first"])]

    @property
    def order_fields(self):
        if self.settings["bonus_in_score"]:
            fields = [("total_score", True)]
        else:
            fields = [("base_score", True), ("bonus", True)]
        if self.settings["more_submissions_first"]:
            fields.append(("submission_count", True))
        return tuple(fields) + (("first_submission_at", False),)

    def is_scored(self, standing):
        return standing.total_score > 0

    def scored_q(self):
        return Q(total_score__gt=0)

    def sort_key(self, standing):
        if self.settings["bonus_in_score"]:
            key = (-standing.total_score,)
        else:
            key = (-standing.base_score, -standing.bonus)
        if self.settings["more_submissions_first"]:
            key += (-standing.submission_count,)
        return key + (standing.first_submission_at or _FAR_FUTURE,)


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
