"""Changing a season's controls from the organizer pages: its dates and submission limits, how it is
judged, its ranking rule and its dataset weight rule. Every change needs a reason and is audited with
what it was before and after; a refused change writes nothing.

The scoreboard freeze is the public side's (leaderboard/services.py); the ranking and weight rules
keep their own services (seasons.py, weighting.py), which this one calls with the reason checked.
"""
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import GpuType, Season
from submissions.rules import ranking, weights
from submissions.services import audit, reasons, seasons, weighting

# The plain fields an organizer sets here (besides `gpu_types`), audited as `season.settings_changed`.
PLAIN_FIELDS = ("starts_at", "ends_at", "is_open", "code_public_after_end", "max_submissions_per_hour",
                "max_submissions_per_day", "second_judging", "min_harness_version")
REASON_MAX_CHARS = reasons.REASON_MAX_CHARS


# A season's submission limit above this limits nothing; the database's own bound (2**31 - 1 on
# PostgreSQL, 2**63 - 1 on SQLite) differed between them and named a ten-digit figure.
MAX_SUBMISSION_LIMIT = 100_000


def _past_the_ceiling(value):
    """Whether a limit the database's own bound refused is past ours too (then ours is named)."""
    try:
        return int(value) > MAX_SUBMISSION_LIMIT
    except (TypeError, ValueError):
        return False


class SettingsRefused(ValidationError):
    """A change that cannot be made as asked; `message_dict` names each field at fault ("reason" for a
    missing reason, NON_FIELD_ERRORS for the change as a whole)."""


def checked_reason(reason):
    """The reason, stripped; SettingsRefused when there is none."""
    reason = (reason or "").strip()
    if not reason:
        raise SettingsRefused({"reason": _("Say why: the reason is kept in the audit trail.")})
    if len(reason) > REASON_MAX_CHARS:
        raise SettingsRefused({"reason": _("Keep the reason under %(count)s characters.")
                                         % {"count": REASON_MAX_CHARS}})
    return reason


def _as_json(value):
    """A field's value as the audit trail keeps it (JSON)."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _gpu_slugs(gpu_types):
    return sorted(gpu_type.slug for gpu_type in gpu_types)


def _validated(stored, changes):
    """The changes cleaned by the model's own fields (choices, validators); SettingsRefused naming each
    field at fault."""
    errors, cleaned = {}, {}
    for name, value in changes.items():
        if name == "gpu_types":
            continue
        try:
            cleaned[name] = Season._meta.get_field(name).clean(value, stored)
        except ValidationError as exc:
            errors[name] = exc.messages
    for name in ("max_submissions_per_hour", "max_submissions_per_day"):
        if cleaned.get(name) is not None and cleaned[name] < 1 and name not in errors:
            errors[name] = [_("At least 1; leave it empty for the site's default.")]
        if cleaned.get(name) is not None and cleaned[name] > MAX_SUBMISSION_LIMIT or (
                name in errors and _past_the_ceiling(changes.get(name))):
            errors[name] = [_("At most %(most)s; leave it empty for the site's default.") % {"most": MAX_SUBMISSION_LIMIT}]
    starts_at = cleaned.get("starts_at", stored.starts_at)
    ends_at = cleaned.get("ends_at", stored.ends_at)
    if starts_at and ends_at and ends_at <= starts_at and "ends_at" not in errors:
        errors["ends_at"] = [_("The season must end after it starts.")]
    if "gpu_types" in changes and not changes["gpu_types"]:
        errors["gpu_types"] = [_("Pick at least one GPU type: each submission is judged once on every type.")]
    if errors:
        raise SettingsRefused(errors)
    return cleaned


@transaction.atomic
def change_settings(season, changes, *, actor=None, reason=""):
    """Set the season's plain fields (PLAIN_FIELDS) and its GPU types (`gpu_types`: GpuType rows) to
    `changes`, with a reason; SettingsRefused (nothing written) when a value or the reason is unusable.
    Audited as `season.settings_changed` with the fields that changed, before and after. Returns
    {field: (before, after)} of what changed (empty: nothing did)."""
    unknown = set(changes) - {*PLAIN_FIELDS, "gpu_types"}
    if unknown:
        raise ValueError(f"not a season setting: {', '.join(sorted(unknown))}")
    reason = checked_reason(reason)
    stored = Season.objects.select_for_update().get(pk=season.pk)
    cleaned = _validated(stored, changes)
    changed = {name: (getattr(stored, name), value) for name, value in cleaned.items()
               if getattr(stored, name) != value}
    if "gpu_types" in changes:
        before, after = _gpu_slugs(stored.gpu_types.all()), _gpu_slugs(changes["gpu_types"])
        if before != after:
            changed["gpu_types"] = (before, after)
    if not changed:
        return {}
    plain = [name for name in changed if name != "gpu_types"]
    for name in plain:
        setattr(stored, name, changed[name][1])
        setattr(season, name, changed[name][1])
    if plain:
        stored.save(update_fields=plain)  # a new board version: the season's pages show its dates
    if "gpu_types" in changed:
        stored.gpu_types.set(GpuType.objects.filter(slug__in=changed["gpu_types"][1]))  # bumps its boards
    audit.record("season.settings_changed", stored, actor=actor, reason=reason,
                 before={name: _as_json(values[0]) for name, values in changed.items()},
                 after={name: _as_json(values[1]) for name, values in changed.items()})
    return changed


@transaction.atomic
def change_ranking(season, rule_name, settings, *, actor=None, reason=""):
    """Give the season another ranking rule or other settings, with a reason (audited as
    `season.ranking_changed`; the standings are re-ranked at once). Settings that rank as the stored
    ones do change nothing. SettingsRefused when the rule refuses the settings. Returns whether
    anything changed."""
    reason = checked_reason(reason)
    try:
        wanted = ranking.get_rule(rule_name, settings)
    except ranking.RankingSettingsError as exc:
        raise SettingsRefused(str(exc))
    stored = Season.objects.select_for_update().get(pk=season.pk)
    current = ranking.rule_of(stored)
    if (stored.ranking_rule, current.settings) == (rule_name, wanted.settings):
        return False
    seasons.change_ranking(season, rule_name, wanted.settings, actor=actor, reason=reason)
    return True


def change_weights(season, rule_name, settings, *, actor=None, reason=""):
    """Give the season's dataset another weight rule or other settings, with a reason (weighting.py
    validates and audits: `season.weights_changed`). SettingsRefused when either is unusable. Returns
    whether anything changed."""
    reason = checked_reason(reason)
    try:
        return weighting.change_weights(season, rule_name, settings, actor=actor, reason=reason)
    except weights.WeightSettingsError as exc:
        raise SettingsRefused(str(exc))
