"""Ranking rules as a small registry: each rule orders a season's standings and assigns ranks.

A rule sees only materialized Standing rows. Equal keys share a rank; rows the rule
considers unscored come after every scored row (and share the last rank).

Each rule declares its per-season settings (`Setting`s) and validates a season's
`ranking_settings` against them: unknown keys and wrong types are refused with a message
that names the setting, so the admin and the services can show it as it is.
"""
import math
import struct
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.utils.translation import gettext, gettext_lazy as _

_RULES = {}
_FAR_FUTURE = datetime.max.replace(tzinfo=timezone.utc)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

SCORED_PREFIX = b"\x00"
UNSCORED_KEY = b"\x01"  # after every scored key: unscored rows share the last rank


def _sortable_bytes(value):
    """8 bytes whose bytewise order is the numeric order of `value` (a number or an aware datetime).

    Every part is a float (an int, or a datetime in whole microseconds, is exact in one up to 2**53), so
    rows compare alike whether a score was stored as 3 or 3.0.
    """
    if isinstance(value, datetime):
        value = (value - _EPOCH) // timedelta(microseconds=1)
    number = float(value) + 0.0  # -0.0 becomes 0.0: equal scores, equal keys
    if math.isnan(number):
        raise ValueError("a ranking key cannot be NaN")
    (bits,) = struct.unpack(">Q", struct.pack(">d", number))
    # IEEE 754 doubles order as sign-magnitude integers: flip negatives whole, set the sign bit of positives
    bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | 1 << 63
    return struct.pack(">Q", bits)


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

    def is_scored(self, standing) -> bool:
        raise NotImplementedError

    def sort_key(self, standing):
        raise NotImplementedError

    def board_key(self, standing) -> bytes:
        """The standing's place in the rule's order as bytes that compare (bytewise) as sort_key does;
        every unscored row gets UNSCORED_KEY, after every scored one. Stored with the row, so a change of
        one contestant writes one row, and a rank is read as 1 + the rows with a smaller key."""
        if not self.is_scored(standing):
            return UNSCORED_KEY
        return SCORED_PREFIX + b"".join(_sortable_bytes(part) for part in self.sort_key(standing))

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

    def is_scored(self, standing):
        return standing.accepted_count > 0

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

    def is_scored(self, standing):
        return standing.total_score > 0

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

    def is_scored(self, standing):
        return standing.passed_count > 0

    def sort_key(self, standing):
        return (-standing.passed_count, -(standing.geomean_speedup or 0))
