"""Dataset weight rules as a small registry: each season names one, with settings the rule validates.

Seed 001 calls the GPU CodeForces dataset weighted (带权重的评测数据集): every accepted sample carries a
weight that a benchmark over the dataset multiplies its score by. The organizers choose how: the same
weight for every sample (`uniform`), or by the issue's operator, level or framework; any rule takes
hand-set weights of single samples (`samples`, by issue code) that win over what it would give.

Like `ranking.py` and `rubrics.py`, a rule sees plain objects only (an issue) and refuses unusable
settings with a message that names the setting at fault.
"""
import json
import math
from dataclasses import dataclass

from django.utils.translation import gettext, gettext_lazy as _

from submissions.models import ISSUE_CODE_ALPHABET, Framework

_RULES = {}
DEFAULT_RULE = "uniform"
# Weights are plain numbers; the bound keeps a typo (1e9) from drowning every other sample.
MAX_WEIGHT = 1000.0


class WeightSettingsError(ValueError):
    """A weight rule or its settings are unusable; the message (translated) names what is at fault."""


def register(cls):
    _RULES[cls.name] = cls
    return cls


def rule_names():
    return sorted(_RULES)


def get_rule(name, settings=None):
    """The rule `name` with `settings` validated; WeightSettingsError when either is unusable."""
    try:
        cls = _RULES[name]
    except KeyError:
        raise WeightSettingsError(gettext("unknown weight rule '%(name)s'; known: %(known)s")
                                  % {"name": name, "known": ", ".join(rule_names())})
    return cls(settings)


def rule_of(season):
    return get_rule(season.dataset_weight_rule, season.dataset_weight_settings)


def catalog():
    """(name, label, help) of every rule, for organizers' forms and the docs."""
    return [(name, _RULES[name].label, _RULES[name].help) for name in rule_names()]


def _json_text(value):
    return json.dumps(value, ensure_ascii=False)


def clean_weight(value, where):
    """A weight as a float: a JSON number, finite, from 0 to MAX_WEIGHT."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise WeightSettingsError(gettext("%(where)s must be a number, not %(value)s")
                                  % {"where": where, "value": _json_text(value)})
    if not 0 <= value <= MAX_WEIGHT:
        raise WeightSettingsError(gettext("%(where)s must be from 0 to %(max)s, not %(value)s")
                                  % {"where": where, "max": f"{MAX_WEIGHT:g}", "value": f"{value:g}"})
    return float(value)


def weighted_geomean(pairs):
    """exp(sum w ln x / sum w) over (x, w) with x > 0 and w > 0 (the agent's profiler_agent/benchmark/score.py);
    None when no pair counts."""
    kept = [(x, w) for x, w in pairs if x and x > 0 and w and w > 0]
    total = sum(w for _x, w in kept)
    return math.exp(sum(w * math.log(x) for x, w in kept) / total) if total else None


def is_issue_code(text):
    return isinstance(text, str) and len(text) == 6 and all(c in ISSUE_CODE_ALPHABET for c in text)


@dataclass(frozen=True)
class Weight:
    value: float
    # "sample": set by hand for this sample; "rule": the rule's table matched; "default": it did not
    source: str

    @property
    def label(self):
        return {"sample": _("set by hand"), "rule": _("by the season's rule"), "default": _("the rule's default")}[self.source]


class WeightRule:
    name = ""
    label = ""
    help = ""
    # What the keys of `weights` are, in words (None: the rule takes no table).
    keys_label = None

    def __init__(self, settings=None):
        self.settings = self.clean_settings(settings)

    @classmethod
    def allowed_keys(cls):
        return ("default", "samples") + (("weights",) if cls.keys_label is not None else ())

    @classmethod
    def clean_key(cls, key):
        """A key of `weights` as the rule compares it; WeightSettingsError when it cannot match anything."""
        return key

    @classmethod
    def key_choices(cls):
        """[(key, label), ...] when `weights` takes a fixed set of keys (a form gives each its field);
        None when it takes none or any text (a form gives rows to fill in)."""
        return None

    @classmethod
    def clean_settings(cls, raw):
        """{"default": float, "weights": {key: float}, "samples": {issue code: float}}, or WeightSettingsError."""
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise WeightSettingsError(gettext("the weight settings must be a JSON object, like {}"))
        allowed = cls.allowed_keys()
        unknown = sorted(set(raw) - set(allowed))
        if unknown:
            raise WeightSettingsError(gettext("unknown weight settings for %(rule)s: %(keys)s; allowed: %(allowed)s")
                                      % {"rule": cls.name, "keys": ", ".join(unknown), "allowed": ", ".join(allowed)})
        cleaned = {"default": clean_weight(raw.get("default", 1.0), "'default'")}
        if "weights" in allowed:
            table = raw.get("weights", {})
            if not isinstance(table, dict):
                raise WeightSettingsError(gettext("'weights' must be an object of %(keys)s -> weight")
                                          % {"keys": cls.keys_label})
            weights = {}
            for key, value in table.items():
                clean = cls.clean_key(key)
                if clean in weights:
                    raise WeightSettingsError(gettext("'weights' names %(key)s twice") % {"key": _json_text(clean)})
                weights[clean] = clean_weight(value, f"'weights.{key}'")
            cleaned["weights"] = dict(sorted(weights.items()))
        samples = raw.get("samples", {})
        if not isinstance(samples, dict):
            raise WeightSettingsError(gettext("'samples' must be an object of issue code -> weight"))
        for code in samples:
            if not is_issue_code(code):
                raise WeightSettingsError(gettext("'samples' has %(key)s; its keys are issue codes of six capital "
                                                  "letters, like ICTXSZ") % {"key": _json_text(code)})
        cleaned["samples"] = {code: clean_weight(samples[code], f"'samples.{code}'") for code in sorted(samples)}
        return cleaned

    def key_of(self, issue):
        """The issue's key in the rule's table (None: the rule has no table)."""
        return None

    def weight_for(self, issue):
        """The weight of the issue's accepted sample, and where it comes from."""
        if issue.code in self.settings["samples"]:
            return Weight(self.settings["samples"][issue.code], "sample")
        key = self.key_of(issue)
        table = self.settings.get("weights", {})
        if key is not None and key in table:
            return Weight(table[key], "rule")
        return Weight(self.settings["default"], "default")


@register
class UniformRule(WeightRule):
    name = "uniform"
    label = _("The same weight for every sample")
    help = _("Every sample weighs 'default' (1), but those set by hand in 'samples'.")


@register
class OperatorRule(WeightRule):
    name = "operator"
    label = _("By the issue's operator (category)")
    help = _("'weights' maps an operator, as issues name it (case and spaces ignored), to its weight; "
             "other operators weigh 'default'.")
    keys_label = _("operator")

    @staticmethod
    def normalize(text):
        return " ".join(str(text).split()).casefold()

    @classmethod
    def clean_key(cls, key):
        clean = cls.normalize(key)
        if not clean:
            raise WeightSettingsError(gettext("'weights' has an empty operator name"))
        return clean

    def key_of(self, issue):
        return self.normalize(issue.operator) or None


@register
class LevelRule(WeightRule):
    name = "level"
    label = _("By the issue's level (1-4)")
    help = _("'weights' maps a level \"1\" to \"4\" (seed 000's levels) to its weight; issues without a level "
             "weigh 'default'.")
    keys_label = _("level")
    LEVELS = ("1", "2", "3", "4")

    @classmethod
    def clean_key(cls, key):
        if str(key) not in cls.LEVELS:
            raise WeightSettingsError(gettext("'weights' has level %(key)s; levels are 1-4") % {"key": _json_text(key)})
        return str(key)

    @classmethod
    def key_choices(cls):
        return [(level, level) for level in cls.LEVELS]

    def key_of(self, issue):
        return str(issue.level) if issue.level else None


@register
class FrameworkRule(WeightRule):
    name = "framework"
    label = _("By the issue's framework")
    help = _("'weights' maps a framework (pytorch, paddle, tensorflow, jax, mmcv, transformers, other) to its "
             "weight; other frameworks weigh 'default'.")
    keys_label = _("framework")

    @classmethod
    def clean_key(cls, key):
        if key not in Framework.values:
            raise WeightSettingsError(gettext("'weights' has framework %(key)s; frameworks: %(known)s")
                                      % {"key": _json_text(key), "known": ", ".join(Framework.values)})
        return key

    @classmethod
    def key_choices(cls):
        return list(Framework.choices)

    def key_of(self, issue):
        return issue.framework
