"""Dataset weights (submissions/rules/weights.py): a registry of rules, each validating its own settings;
changed through services/weighting.py (audited, never partly written), shown on the sample's page."""
import pytest
from django.core.exceptions import ValidationError

from submissions import selectors
from submissions.models import AuditEntry, Season
from submissions.rules import weights
from submissions.services import weighting
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db


class FakeIssue:
    def __init__(self, code="ABCDEF", operator="", level=None, framework="pytorch"):
        self.code, self.operator, self.level, self.framework = code, operator, level, framework


@pytest.mark.parametrize("rule, config, message", [
    ("elo", {}, "unknown weight rule 'elo'; known: framework, level, operator, uniform"),
    ("uniform", [], "the weight settings must be a JSON object, like {}"),
    ("uniform", {"weights": {}}, "unknown weight settings for uniform: weights; allowed: default, samples"),
    ("level", {"wieghts": {}}, "unknown weight settings for level: wieghts; allowed: default, samples, weights"),
    ("uniform", {"default": "2"}, "'default' must be a number, not \"2\""),
    ("uniform", {"default": True}, "'default' must be a number, not true"),
    ("uniform", {"default": -1}, "'default' must be from 0 to 1000, not -1"),
    ("level", {"weights": {"5": 2}}, "'weights' has level \"5\"; levels are 1-4"),
    ("level", {"weights": [1, 2]}, "'weights' must be an object of level -> weight"),
    ("level", {"weights": {"3": 1e6}}, "'weights.3' must be from 0 to 1000, not 1e+06"),
    ("framework", {"weights": {"PyTorch": 2}}, "'weights' has framework \"PyTorch\"; frameworks: pytorch, paddle"),
    ("operator", {"weights": {"ReLU": 1, " relu ": 2}}, "'weights' names \"relu\" twice"),
    ("operator", {"weights": {"  ": 1}}, "'weights' has an empty operator name"),
    ("operator", {"samples": {"abc": 2}}, "'samples' has \"abc\"; its keys are issue codes of six capital letters"),
    ("uniform", {"samples": {"ABCDEF": None}}, "'samples.ABCDEF' must be a number, not null"),
])
def test_bad_settings_are_refused_with_a_message_naming_the_setting(rule, config, message):
    with pytest.raises(weights.WeightSettingsError) as refused:
        weights.get_rule(rule, config)
    assert message in str(refused.value)


def test_each_rule_weighs_by_its_table_then_its_default_and_hand_set_weights_win():
    level = weights.get_rule("level", {"weights": {"3": 5, 1: 1}, "default": 0.5, "samples": {"HANDHD": 9}})
    assert level.settings == {"default": 0.5, "weights": {"1": 1.0, "3": 5.0}, "samples": {"HANDHD": 9.0}}
    assert level.weight_for(FakeIssue(level=3)) == weights.Weight(5.0, "rule")
    assert level.weight_for(FakeIssue(level=None)) == weights.Weight(0.5, "default")
    assert level.weight_for(FakeIssue(code="HANDHD", level=3)) == weights.Weight(9.0, "sample")
    operator = weights.get_rule("operator", {"weights": {"Fused  Attention": 4}})
    assert operator.weight_for(FakeIssue(operator="fused attention")).value == 4.0
    assert operator.weight_for(FakeIssue(operator="relu")) == weights.Weight(1.0, "default")
    framework = weights.get_rule("framework", {"weights": {"paddle": 2}})
    assert framework.weight_for(FakeIssue(framework="paddle")).value == 2.0
    assert weights.get_rule("uniform", {}).weight_for(FakeIssue()) == weights.Weight(1.0, "default")


def test_changing_the_rule_is_validated_audited_and_stored_cleaned(season, organizer):
    assert weighting.change_weights(season, "level", {"weights": {"3": 5}}, actor=organizer.user, reason="fused count more")
    season.refresh_from_db()
    assert (season.dataset_weight_rule, season.dataset_weight_settings) == (
        "level", {"default": 1.0, "weights": {"3": 5.0}, "samples": {}})
    entry = AuditEntry.objects.get(action="season.weights_changed")
    assert (entry.actor, entry.reason, entry.before, entry.after) == (
        organizer.user, "fused count more", {"rule": "uniform", "settings": {}},
        {"rule": "level", "settings": {"default": 1.0, "weights": {"3": 5.0}, "samples": {}}})
    assert not weighting.change_weights(season, "level", {"weights": {"3": 5}}, actor=organizer.user,
                                      reason="again")  # no change
    assert AuditEntry.objects.filter(action="season.weights_changed").count() == 1


def test_a_refused_change_writes_nothing(season, organizer, alice):
    with pytest.raises(weights.WeightSettingsError, match="level \"9\""):
        weighting.change_weights(season, "level", {"weights": {"9": 1}}, actor=organizer.user, reason="typo")
    with pytest.raises(weights.WeightSettingsError, match="not in season S1: NOTHER"):
        weighting.change_weights(season, "uniform", {"samples": {"NOTHER": 2}}, actor=organizer.user, reason="x")
    season.refresh_from_db()
    assert (season.dataset_weight_rule, season.dataset_weight_settings) == ("uniform", {})
    assert not AuditEntry.objects.filter(action__contains="weight").exists()


def test_a_sample_weight_set_by_hand_needs_a_reason_is_audited_on_the_issue_and_can_be_given_back(season, alice,
                                                                                                  organizer):
    submission = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    issue = submission.issue
    weighting.change_weights(season, "level", {"default": 2}, actor=organizer.user, reason="levels count")
    with pytest.raises(weights.WeightSettingsError, match="say why"):
        weighting.set_sample_weight(issue, 3, actor=organizer.user, reason=" ")
    with pytest.raises(weights.WeightSettingsError, match="must be from 0 to 1000"):
        weighting.set_sample_weight(issue, 5000, actor=organizer.user, reason="big")
    assert weighting.set_sample_weight(issue, 3, actor=organizer.user, reason="reviewed twice")
    issue.season.refresh_from_db()
    assert selectors.sample_weight(issue) == weights.Weight(3.0, "sample")
    entry = AuditEntry.objects.get(action="sample.weight_changed")
    assert (entry.object_type, entry.object_id, entry.reason) == ("issue", str(issue.pk), "reviewed twice")
    assert entry.before["settings"]["samples"] == {} and entry.after["settings"]["samples"] == {issue.code: 3.0}
    assert entry.after["rule"] == "level"  # the rule stays
    weighting.set_sample_weight(issue, None, actor=organizer.user, reason="back to the rule")
    issue.season.refresh_from_db()
    assert selectors.sample_weight(issue) == weights.Weight(2.0, "default")


def test_the_season_form_refuses_bad_weight_settings_like_bad_ranking_settings(season):
    season.dataset_weight_rule, season.dataset_weight_settings = "framework", {"weights": {"cobol": 2}}
    with pytest.raises(ValidationError) as refused:
        season.full_clean()
    assert "frameworks: pytorch" in str(refused.value.message_dict["dataset_weight_settings"])


def test_the_issue_page_shows_the_samples_weight_and_how_it_was_decided(client, season, alice, organizer):
    submission = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    weighting.set_sample_weight(submission.issue, 2.5, actor=organizer.user, reason="rare operator")
    page = client.get(f"/issues/{submission.issue.code}/").content.decode()
    assert f"In the season's dataset: submission #{submission.pk}, weight 2.5 (set by hand)." in page
    zh = client.get(f"/issues/{submission.issue.code}/", headers={"Accept-Language": "zh-CN"}).content.decode()
    assert 'id="dataset-sample"' in zh and "2.5" in zh and "set by hand" not in zh


def test_an_issue_without_an_accepted_sample_shows_no_weight(client, season, alice):
    from submissions.services import submitting

    issue = submitting.open_issue(season, alice, title="ReLU")
    assert 'id="dataset-sample"' not in client.get(f"/issues/{issue.code}/").content.decode()


def test_the_admin_changes_weights_through_the_service(client, season, organizer):
    organizer.user.is_superuser = True
    organizer.user.save()
    client.force_login(organizer.user)
    form = {"code": "S1", "name": "Season one", "ranking_rule": "accepted_count", "ranking_settings": "{}",
            "gpu_types": [g.pk for g in season.gpu_types.all()], "starts_at_0": "2025-01-01", "starts_at_1": "00:00:00",
            "is_open": "on", "rubric": "s1_dataset", "rubric_config": "{}", "code_public_after_end": "on",
            "dataset_weight_rule": "level", "dataset_weight_settings": '{"weights": {"2": 3}}', "second_judging": "off"}
    response = client.post(f"/admin/submissions/season/{season.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    season = Season.objects.get(pk=season.pk)
    assert season.dataset_weight_settings == {"default": 1.0, "weights": {"2": 3.0}, "samples": {}}
    assert AuditEntry.objects.get(action="season.weights_changed").reason == "changed in the admin"
    form["dataset_weight_settings"] = '{"weights": {"7": 3}}'
    refused = client.post(f"/admin/submissions/season/{season.pk}/change/", form)
    assert refused.status_code == 200 and "levels are 1-4" in refused.content.decode()
