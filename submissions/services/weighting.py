"""Changing how a season's dataset weighs its samples: the rule and its settings, or one sample's
weight by hand; validated by the rule (submissions/rules/weights.py), audited, never lost."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import Issue, Season
from submissions.rules import weights
from submissions.services import audit, reasons


def _state(season):
    return {"rule": season.dataset_weight_rule, "settings": season.dataset_weight_settings}


def _store(season, rule_name, settings, *, action, obj, actor, reason):
    """Write the season's new rule and (cleaned) settings and audit the change; False when nothing changed."""
    stored = Season.objects.select_for_update().get(pk=season.pk)
    before = _state(stored)
    after = {"rule": rule_name, "settings": settings}
    season.dataset_weight_rule, season.dataset_weight_settings = rule_name, settings
    if before == after:
        return False
    # update(): the boards do not show weights, so their cached renderings stay valid (Season.save)
    Season.objects.filter(pk=season.pk).update(dataset_weight_rule=rule_name, dataset_weight_settings=settings)
    audit.record(action, obj, actor=actor, before=before, after=after, reason=reason)
    return True


def _unknown_samples(season, codes):
    known = set(Issue.objects.filter(season=season, code__in=codes).values_list("code", flat=True))
    return sorted(set(codes) - known)


@transaction.atomic
def change_weights(season, rule_name, settings=None, *, actor=None, reason=""):
    """Give the season another weight rule or other settings; WeightSettingsError (translated) when
    they are unusable, or name an issue that is not the season's. What is stored is the rule's cleaned
    settings (defaults filled in, keys sorted). A reason is required. Returns whether anything
    changed (audited as `season.weights_changed`)."""
    reason = reason.strip()
    if not reason:
        raise weights.WeightSettingsError(_("say why the weight rule of %(season)s changes: the reason is kept in "
                                            "the audit trail") % {"season": season.code})
    if reasons.too_long(reason):
        raise weights.WeightSettingsError(reasons.too_long(reason))
    rule = weights.get_rule(rule_name, settings)  # validates; raises before anything is written
    unknown = _unknown_samples(season, rule.settings["samples"])
    if unknown:
        raise weights.WeightSettingsError(_("'samples' names issues that are not in season %(season)s: %(codes)s")
                                          % {"season": season.code, "codes": ", ".join(unknown)})
    return _store(season, rule_name, rule.settings, action="season.weights_changed", obj=season, actor=actor,
                  reason=reason)


@transaction.atomic
def set_sample_weight(issue, weight, *, actor=None, reason=""):
    """Set the weight of the issue's sample by hand (None: the season's rule decides again), with a
    reason; WeightSettingsError when the weight is unusable or the reason is missing. Audited as
    `sample.weight_changed` on the issue. Returns whether anything changed."""
    reason = reason.strip()
    if not reason:
        raise weights.WeightSettingsError(_("say why the weight of %(issue)s is set by hand: the reason is kept "
                                            "in the audit trail") % {"issue": issue.code})
    if reasons.too_long(reason):
        raise weights.WeightSettingsError(reasons.too_long(reason))
    season = Season.objects.select_for_update().get(pk=issue.season_id)
    settings = dict(weights.rule_of(season).settings)
    samples = dict(settings["samples"])
    if weight is None:
        samples.pop(issue.code, None)
    else:
        samples[issue.code] = weights.clean_weight(weight, _("the weight of %(issue)s") % {"issue": issue.code})
    settings["samples"] = dict(sorted(samples.items()))
    return _store(season, season.dataset_weight_rule, settings, action="sample.weight_changed", obj=issue,
                  actor=actor, reason=reason)


def parse_weight(text):
    """A weight typed in a form ("2", "0.5"; empty: back to the rule) as a number or None; WeightSettingsError."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise weights.WeightSettingsError(_("%(value)s is not a number") % {"value": text})
