"""Scoring rubrics as a small registry: each season names one, with a config the rubric validates.

A rubric lists its items (base or bonus, with their points), prefills what the runs measured,
and turns an organizer's points into (base score, bonus). Like `ranking.py`, it sees plain objects
only: a submission with its files and its latest runs.
"""
import ast
import math
from dataclasses import dataclass

from django.utils.translation import gettext, gettext_lazy as _

from submissions.agent_protocol import LLM_VARIANT_NAME, REFERENCE_NAMES
from submissions.rules import ranked_runs

_RUBRICS = {}


class RubricConfigError(ValueError):
    """A season's rubric config is unusable; the message names the key at fault."""


class RubricPointsError(ValueError):
    """An organizer's points are unusable; the message names the item at fault."""


def register(cls):
    _RUBRICS[cls.name] = cls
    return cls


def rubric_names():
    return sorted(_RUBRICS)


def get_rubric(name, config=None):
    try:
        cls = _RUBRICS[name]
    except KeyError:
        raise RubricConfigError(gettext("unknown rubric '%(name)s'; known: %(known)s")
                                % {"name": name, "known": ", ".join(rubric_names())})
    return cls(config or {})


def rubric_of(season):
    return get_rubric(season.rubric, season.rubric_config)


@dataclass(frozen=True)
class Item:
    key: str
    label: str
    points: float
    bonus: bool = False
    # Filled in from the runs (True) or decided by the organizer alone (False).
    measured: bool = False


def _number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RubricConfigError(gettext("%(where)s must be a number, not %(value)r") % {"where": where, "value": value})
    if value < 0:
        raise RubricConfigError(gettext("%(where)s must not be negative (%(value)s)") % {"where": where, "value": value})
    return float(value)


def passed_runs(runs):
    return [run for run in runs if run.verdict == "passed"]


def has_reference_numpy(files):
    """Whether the reference defines a module-level `reference_numpy` function (the GT item)."""
    source = next((files[name] for name in REFERENCE_NAMES if files.get(name)), "")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.FunctionDef) and node.name == "reference_numpy" for node in tree.body)


def llm_variant_passed(runs):
    return any(((run.result or {}).get("variants") or {}).get(LLM_VARIANT_NAME.removesuffix(".py"), {}).get("status") == "passed"
               for run in passed_runs(runs))


class Rubric:
    name = ""
    label = ""
    allowed_config = ()

    def __init__(self, config):
        if not isinstance(config, dict):
            raise RubricConfigError(gettext("the rubric config must be a JSON object"))
        unknown = sorted(set(config) - set(self.allowed_config))
        if unknown:
            raise RubricConfigError(gettext("unknown rubric config keys for %(rubric)s: %(keys)s; allowed: %(allowed)s")
                                    % {"rubric": self.name, "keys": ", ".join(unknown),
                                       "allowed": ", ".join(self.allowed_config)})
        self.config = config
        points = config.get("points", {})
        if not isinstance(points, dict):
            raise RubricConfigError(gettext("'points' must be an object of item -> points"))
        defaults = {item.key: item for item in self.default_items()}
        for key, value in points.items():
            if key not in defaults:
                raise RubricConfigError(gettext("'points.%(key)s' is not an item of %(rubric)s; items: %(items)s")
                                        % {"key": key, "rubric": self.name, "items": ", ".join(defaults)})
            _number(value, f"'points.{key}'")
        self.items = [Item(i.key, i.label, float(points.get(i.key, i.points)), i.bonus, i.measured)
                      for i in self.default_items()]

    def default_items(self):
        raise NotImplementedError

    def item(self, key):
        return next(i for i in self.items if i.key == key)

    def prefill(self, submission, files, runs):
        """Points suggested from the submission's files and latest runs: item key -> points."""
        raise NotImplementedError

    def clean_points(self, raw):
        """Every item's points as floats from 0 to the item's points (missing ones are 0), or RubricPointsError."""
        keys = {i.key for i in self.items}
        unknown = sorted(set(raw) - keys)
        if unknown:
            raise RubricPointsError(gettext("unknown rubric items: %(unknown)s; items: %(items)s")
                                    % {"unknown": ", ".join(unknown), "items": ", ".join(sorted(keys))})
        points = {}
        for item in self.items:
            given = raw.get(item.key, 0)
            try:
                value = float(given if given not in ("", None) else 0)
            except (TypeError, ValueError):
                value = math.nan
            if not math.isfinite(value):  # "nan" and "inf" pass float(); the database cannot store them
                raise RubricPointsError(gettext("%(item)s: %(value)r is not a number") % {"item": item.label, "value": given})
            if value < 0:
                raise RubricPointsError(gettext("%(item)s: points must not be negative") % {"item": item.label})
            if value > item.points:
                raise RubricPointsError(gettext("%(item)s: %(value)s points are more than the item's %(max)s")
                                        % {"item": item.label, "value": f"{value:g}", "max": f"{item.points:g}"})
            points[item.key] = value
        return points

    def totals(self, points):
        """(base score, bonus) of cleaned points."""
        base = sum(v for k, v in points.items() if not self.item(k).bonus)
        bonus = sum(v for k, v in points.items() if self.item(k).bonus)
        return base, bonus


def ground_truth_holds(runs):
    """No agent found the bundle's reference_numpy disagreeing with its reference model (or failing);
    agents that did not check it (older agents) leave the file's presence to decide."""
    outcomes = [(((r.result or {}).get("correctness") or {}).get("reference_numpy") or {}).get("outcome")
                for r in runs]
    return not any(outcome in ("disagrees", "error") for outcome in outcomes)


@register
class S1DatasetRubric(Rubric):
    """GPUCodeForces S1 (seed 001): measured items from the runs, and a bonus for the LLM prompt."""

    name = "s1_dataset"
    label = _("GPUCodeForces S1: dataset samples")
    allowed_config = ("points",)

    def default_items(self):
        return [
            Item("ground_truth", _("Ground-truth function (reference_numpy)"), 2, measured=True),
            Item("execution_time", _("CUDA execution time measured"), 5, measured=True),
            Item("throughput", _("CUDA throughput measured"), 4, measured=True),
            Item("bandwidth", _("CUDA memory bandwidth measured"), 3, measured=True),
            Item("llm_prompt", _("LLM prompt whose generated code was judged too"), 5, bonus=True, measured=True),
        ]

    def prefill(self, submission, files, runs):
        passed = passed_runs(runs)
        earned = {
            "ground_truth": has_reference_numpy(files) and ground_truth_holds(runs),
            "execution_time": any(r.candidate_median_ms is not None for r in passed),
            "throughput": any(r.tflops is not None for r in passed),
            "bandwidth": any(r.bandwidth_gbs is not None for r in passed),
            "llm_prompt": llm_variant_passed(runs),
        }
        return {i.key: (i.points if earned[i.key] else 0.0) for i in self.items}


@register
class KernelContestRubric(Rubric):
    """GPUKernelContest (seed 000): points by the issue's level, merged upstream, and bonus items."""

    name = "kernel_contest"
    label = _("GPUKernelContest: level, merge and bonus items")
    allowed_config = ("points", "level_points", "clear_speedup_at_least")
    DEFAULT_LEVEL_POINTS = {"1": 5, "2": 10, "3": 50, "4": 50}

    def __init__(self, config):
        super().__init__(config)
        levels = config.get("level_points", self.DEFAULT_LEVEL_POINTS)
        if not isinstance(levels, dict) or not levels:
            raise RubricConfigError(gettext("'level_points' must be an object of level -> points, e.g. {\"1\": 5}"))
        self.level_points = {}
        for level, value in levels.items():
            if str(level) not in {"1", "2", "3", "4"}:
                raise RubricConfigError(gettext("'level_points' has level %(level)r; levels are 1-4") % {"level": level})
            self.level_points[int(level)] = _number(value, f"'level_points.{level}'")
            if self.level_points[int(level)] > self.item("level").points:
                raise RubricConfigError(gettext("'level_points.%(level)s' (%(value)s) is above the level item's "
                                                "%(max)s points; raise 'points.level' too")
                                        % {"level": level, "value": f"{value:g}", "max": f"{self.item('level').points:g}"})
        self.clear_speedup = _number(config.get("clear_speedup_at_least", 1.3), "'clear_speedup_at_least'")

    def default_items(self):
        return [
            Item("level", _("Level 1-4 of the issue (5/10/50/50)"), 50, measured=True),
            Item("merged", _("Merged into the official repository"), 50),
            Item("clean_code", _("Clean, clear code"), 10, bonus=True),
            Item("clear_speedup", _("Clear speedup"), 10, bonus=True, measured=True),
            Item("documented", _("Optimization process and model source documented"), 20, bonus=True),
            Item("llm_prompt", _("LLM prompt and generated code"), 20, bonus=True, measured=True),
        ]

    def prefill(self, submission, files, runs):
        passed = passed_runs(runs)
        level = self.level_points.get(submission.issue.level or 0, 0.0) if passed else 0.0
        # the ranked figures, one per GPU type judged (no time awaiting an organizer's clearance)
        speedups = [f.speedup for f in ranked_runs.by_gpu_type(submission.runs.all()).values()]
        return {
            "level": level,
            "merged": 0.0,
            "clean_code": 0.0,
            "clear_speedup": self.item("clear_speedup").points if speedups and min(speedups) >= self.clear_speedup else 0.0,
            "documented": 0.0,
            "llm_prompt": self.item("llm_prompt").points if llm_variant_passed(runs) and "prompt.txt" in files else 0.0,
        }
