"""Changing how a season is ranked: the rule and its settings, validated, audited, and applied at once."""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.models import Season
from submissions.rules.ranking import RankingSettingsError, get_rule
from submissions.services import audit, standings


@transaction.atomic
def change_ranking(season, rule_name, settings=None, *, actor=None, reason=""):
    """Give the season another rule or other settings, with a reason; RankingSettingsError (translated)
    when they are unusable or the reason is missing. The standings are re-ranked in the same
    transaction, so no page shows ranks of the old rule next to the new rule's name. Returns how many
    standings moved."""
    settings = {} if settings is None else settings
    get_rule(rule_name, settings)  # validates; raises before anything is written
    reason = reason.strip()
    if not reason:
        raise RankingSettingsError(_("say why the ranking rule of %(season)s changes: the reason is kept in the "
                                     "audit trail") % {"season": season.code})
    stored = Season.objects.select_for_update().get(pk=season.pk)
    before = {"ranking_rule": stored.ranking_rule, "ranking_settings": stored.ranking_settings}
    after = {"ranking_rule": rule_name, "ranking_settings": settings}
    season.ranking_rule, season.ranking_settings = rule_name, settings
    if before == after:
        return 0
    Season.objects.filter(pk=season.pk).update(**after)
    audit.record("season.ranking_changed", season, actor=actor, before=before, after=after, reason=reason)
    return standings.rerank(season)
