"""The season settings page (/organizer/seasons/<code>/settings/): each control changes the season,
needs a reason, is audited with before and after, shows bad input next to its field and leaves the
season as it was; only organizers reach it. Also: a weight rule changed and a dataset exported need a
reason wherever they come from, and the header's admin link is a superuser's."""
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
from django.utils import timezone

from leaderboard.models import ScoreboardFreeze
from submissions.models import AuditEntry, DatasetExport, GpuType, Season
from submissions.rules import weights
from submissions.services import accounts, datasets, season_settings, weighting
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db

PAGE = "/organizer/seasons/S1/settings/"
FREEZE = "/organizer/seasons/S1/settings/freeze/"
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    return settings.DATASET_EXPORT_DIR


@pytest.fixture
def signed_in(client, organizer):
    client.force_login(organizer.user)
    return client


def stored(season):
    return Season.objects.get(pk=season.pk)


def season_audited():
    """Whether anything about a season is in the audit trail (registering an account audits its agreement)."""
    return AuditEntry.objects.filter(object_type="season").exists()


def entries(action):
    return list(AuditEntry.objects.filter(action=action).order_by("pk"))


def field_errors(response, field):
    """The error list rendered right after the field named `field` (its div.field), as text."""
    text = response.content.decode()
    block = text.split(f'name="{field}"', 1)[1].split('<div class="field', 1)[0]
    return block.split('<ul class="errorlist"', 1)[1].split("</ul>", 1)[0] if 'class="errorlist"' in block else ""


def schedule(season, **changes):
    """The schedule form as the page shows it, with `changes` typed over it."""
    form = {"section": "schedule", "schedule-starts_at": timezone.localtime(season.starts_at).strftime("%Y-%m-%dT%H:%M"),
            "schedule-ends_at": "", "schedule-is_open": "on", "schedule-code_public_after_end": "on",
            "schedule-max_submissions_per_hour": "", "schedule-max_submissions_per_day": "",
            "schedule-reason": "a reason"}
    form.update({f"schedule-{key}": value for key, value in changes.items()})
    return {key: value for key, value in form.items() if value is not None}


# ---- who reaches it -----------------------------------------------------------------------------


@pytest.mark.parametrize("method, path, data", [
    ("get", PAGE, None),
    ("post", PAGE, {"section": "ranking", "ranking-rule": "cumulative_score", "ranking-reason": "mine now"}),
    ("post", FREEZE, {"freeze-action": "freeze", "freeze-reason": "mine now"}),
    ("get", "/organizer/seasons/", None),
])
def test_visitors_are_sent_to_sign_in_and_contestants_refused_and_nothing_changes(client, season, alice, method,
                                                                                  path, data):
    before = (stored(season).ranking_rule, stored(season).board_version)
    anonymous = getattr(client, method)(path, data) if data else getattr(client, method)(path)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client.force_login(alice.user)
    refused = getattr(client, method)(path, data) if data else getattr(client, method)(path)
    assert refused.status_code == 403
    assert (stored(season).ranking_rule, stored(season).board_version) == before
    assert not ScoreboardFreeze.objects.exists() and not season_audited()


def test_the_page_shows_every_control_in_english_and_chinese(signed_in, season):
    page = signed_in.get(PAGE).content.decode()
    for form in ("freeze-form", "schedule-form", "judging-form", "ranking-form", "weights-form"):
        assert f'id="{form}"' in page
    # one fieldset of settings per rule, built from the rule's own declarations
    for rule in ("accepted_count", "cumulative_score"):
        assert f'id="ranking-settings-{rule}"' in page
    assert 'name="ranking-accepted_count-bonus_breaks_ties"' in page
    assert 'name="ranking-cumulative_score-more_submissions_first"' in page
    for key in ("1", "2", "3", "4"):
        assert f'name="weights-level-{key}"' in page
    assert 'name="weights-framework-paddle"' in page and 'name="weights-operator-key-0"' in page
    assert "Live: everyone sees the current board." in page
    zh = signed_in.get(PAGE, headers=ZH).content.decode()
    assert '<html lang="zh-hans">' in zh and 'id="weights-form"' in zh and "原因" in zh  # "Reason"


def test_the_seasons_page_and_the_review_queue_lead_to_each_seasons_settings(signed_in, season):
    Season.objects.create(code="S2", name="Season two")
    listed = signed_in.get("/organizer/seasons/").content.decode()
    for code in ("S1", "S2"):
        row = listed.split(f'id="season-{code}"')[1].split("</tr>")[0]
        assert f'href="/organizer/seasons/{code}/settings/"' in row
    queue = signed_in.get("/organizer/").content.decode()
    assert 'href="/organizer/seasons/S2/settings/"' in queue.split('id="season-settings"')[1].split("</p>")[0]


def test_the_admin_link_is_a_superusers_and_organizers_get_their_pages_instead(client, season, organizer, alice):
    client.force_login(organizer.user)
    header = client.get("/").content.decode().split("</header>")[0]
    assert 'href="/admin/"' not in header and 'href="/organizer/seasons/"' in header
    admin = accounts.register_contestant("root", "pw-root-12345", is_staff=True)
    admin.user.is_superuser = True
    admin.user.save()
    client.force_login(admin.user)
    assert 'href="/admin/"' in client.get("/").content.decode().split("</header>")[0]
    client.force_login(alice.user)
    header = client.get("/").content.decode().split("</header>")[0]
    assert 'href="/admin/"' not in header and 'href="/organizer/seasons/"' not in header


# ---- dates and submissions ------------------------------------------------------------------------


def test_dates_opening_and_limits_change_the_season_and_are_audited(signed_in, season, organizer):
    version = stored(season).board_version
    response = signed_in.post(PAGE, schedule(season, starts_at="2031-03-01T09:00", ends_at="2031-06-30T18:00",
                                             is_open=None, max_submissions_per_hour="4",
                                             max_submissions_per_day="20", reason="the spring round"))
    assert response.status_code == 302 and response["Location"] == f"{PAGE}#schedule"
    after = stored(season)
    zone = timezone.get_current_timezone()
    assert after.starts_at == datetime(2031, 3, 1, 9, 0, tzinfo=zone)
    assert after.ends_at == datetime(2031, 6, 30, 18, 0, tzinfo=zone)
    assert (after.is_open, after.max_submissions_per_hour, after.max_submissions_per_day) == (False, 4, 20)
    assert after.board_version != version  # the season's pages show its dates: cached ones are stale
    [entry] = entries("season.settings_changed")
    assert (entry.actor, entry.reason, entry.object_id) == (organizer.user, "the spring round", str(season.pk))
    assert set(entry.before) == set(entry.after) == {"starts_at", "ends_at", "is_open", "max_submissions_per_hour",
                                                     "max_submissions_per_day"}
    assert (entry.before["is_open"], entry.after["is_open"]) == (True, False)
    assert (entry.before["ends_at"], entry.after["max_submissions_per_day"]) == (None, 20)
    assert entry.after["starts_at"] == datetime(2031, 3, 1, 9, 0, tzinfo=dt_timezone.utc).isoformat()
    page = signed_in.get(PAGE).content.decode()
    assert "the spring round" in page.split('id="season-history"')[1]  # the history shows it


def test_the_form_left_as_shown_changes_nothing_though_the_page_shows_minutes(signed_in, season):
    season.starts_at = timezone.now().replace(microsecond=123456)
    season.save()
    done = signed_in.post(PAGE, schedule(stored(season), reason="just looking"), follow=True)
    assert "Nothing changed: S1 was already so." in done.content.decode()
    assert stored(season).starts_at == season.starts_at and not season_audited()


@pytest.mark.parametrize("changes, field, message", [
    ({"reason": "  "}, "schedule-reason", "Say why: the reason is kept in the audit trail."),
    ({"ends_at": "2020-01-01T00:00"}, "schedule-ends_at", "The season must end after it starts."),
    ({"starts_at": "not a date"}, "schedule-starts_at", "Enter a valid date/time."),
    ({"max_submissions_per_hour": "0"}, "schedule-max_submissions_per_hour", "greater than or equal to 1"),
    ({"max_submissions_per_day": "many"}, "schedule-max_submissions_per_day", "Enter a whole number."),
])
def test_bad_dates_limits_or_a_missing_reason_show_next_to_the_field_and_change_nothing(signed_in, season, changes,
                                                                                         field, message):
    season.starts_at = datetime(2030, 1, 1, tzinfo=dt_timezone.utc)
    season.save()
    before = stored(season)
    refused = signed_in.post(PAGE, schedule(before, is_open=None, **changes))
    assert refused.status_code == 400
    assert message in field_errors(refused, field)
    after = stored(season)
    assert (after.is_open, after.ends_at, after.max_submissions_per_hour) == (True, None, None)
    assert not season_audited()
    # what was typed stays in the form
    assert 'name="schedule-is_open"' in refused.content.decode() and "checked" not in refused.content.decode().split(
        'name="schedule-is_open"')[1].split(">")[0]


# ---- judging ---------------------------------------------------------------------------------------


def test_gpu_types_second_judging_and_harness_version_change_and_are_audited(signed_in, season, organizer):
    h100 = GpuType.objects.create(slug="h100", name="NVIDIA H100")
    cpu = GpuType.objects.get(slug="cpu")
    version = stored(season).board_version
    response = signed_in.post(PAGE, {"section": "judging", "judging-gpu_types": [str(cpu.pk), str(h100.pk)],
                                     "judging-second_judging": "every_passed", "judging-min_harness_version": "1.3",
                                     "judging-reason": "the H100 hosts joined"})
    assert response.status_code == 302 and response["Location"] == f"{PAGE}#judging"
    after = stored(season)
    assert sorted(after.gpu_types.values_list("slug", flat=True)) == ["cpu", "h100"]
    assert (after.second_judging, after.min_harness_version) == ("every_passed", "1.3")
    assert after.board_version != version  # the per-GPU boards the season links changed
    [entry] = entries("season.settings_changed")
    assert entry.before == {"gpu_types": ["c500", "cpu"], "second_judging": "off", "min_harness_version": ""}
    assert entry.after == {"gpu_types": ["cpu", "h100"], "second_judging": "every_passed", "min_harness_version": "1.3"}
    assert entry.reason == "the H100 hosts joined" and entry.actor == organizer.user


@pytest.mark.parametrize("changes, field, message", [
    ({"judging-min_harness_version": "1.x"}, "judging-min_harness_version", "1.x is not a harness version"),
    ({"judging-min_harness_version": "９.０"}, "judging-min_harness_version", "９.０ is not a harness version"),
    ({"judging-gpu_types": []}, "judging-gpu_types", "Pick at least one GPU type"),
    ({"judging-second_judging": "sometimes"}, "judging-second_judging", "Select a valid choice."),
    ({"judging-reason": ""}, "judging-reason", "Say why: the reason is kept in the audit trail."),
])
def test_bad_judging_settings_show_next_to_the_field_and_change_nothing(signed_in, season, changes, field, message):
    form = {"section": "judging", "judging-gpu_types": [str(t.pk) for t in GpuType.objects.all()],
            "judging-second_judging": "every_passed", "judging-min_harness_version": "", "judging-reason": "x", **changes}
    refused = signed_in.post(PAGE, form)
    assert refused.status_code == 400 and message in field_errors(refused, field)
    after = stored(season)
    assert (after.second_judging, after.gpu_types.count()) == ("off", 2) and not season_audited()


# ---- ranking ---------------------------------------------------------------------------------------


def test_the_ranking_rule_and_its_settings_change_rerank_and_are_audited(signed_in, season, organizer):
    response = signed_in.post(PAGE, {"section": "ranking", "ranking-rule": "cumulative_score",
                                     "ranking-cumulative_score-bonus_in_score": "on",
                                     # a hidden rule's field is never read
                                     "ranking-accepted_count-bonus_breaks_ties": "",
                                     "ranking-reason": "seed 000's rule"})
    assert response.status_code == 302 and response["Location"] == f"{PAGE}#ranking"
    after = stored(season)
    assert (after.ranking_rule, after.ranking_settings) == (
        "cumulative_score", {"bonus_in_score": True, "more_submissions_first": False})
    [entry] = entries("season.ranking_changed")
    assert entry.before == {"ranking_rule": "accepted_count", "ranking_settings": {}}
    assert entry.after == {"ranking_rule": "cumulative_score",
                           "ranking_settings": {"bonus_in_score": True, "more_submissions_first": False}}
    assert (entry.reason, entry.actor) == ("seed 000's rule", organizer.user)
    page = signed_in.get(PAGE).content.decode()
    assert "Score, then earlier submission" in page.split('id="ranking"')[1]  # the rule's summary now
    # the same order asked again: nothing to record
    again = signed_in.post(PAGE, {"section": "ranking", "ranking-rule": "cumulative_score",
                                  "ranking-cumulative_score-bonus_in_score": "on", "ranking-reason": "again"},
                           follow=True)
    assert "Nothing changed" in again.content.decode() and len(entries("season.ranking_changed")) == 1


def test_the_default_settings_of_the_rule_in_force_change_nothing(signed_in, season):
    # {} stored, and the form sends every setting at its default: the same order
    done = signed_in.post(PAGE, {"section": "ranking", "ranking-rule": "accepted_count",
                                 "ranking-accepted_count-bonus_breaks_ties": "on", "ranking-reason": "x"}, follow=True)
    assert "Nothing changed" in done.content.decode() and not season_audited()


def test_a_ranking_change_without_a_reason_is_refused(signed_in, season):
    refused = signed_in.post(PAGE, {"section": "ranking", "ranking-rule": "cumulative_score", "ranking-reason": " "})
    assert refused.status_code == 400
    assert "Say why" in field_errors(refused, "ranking-reason")
    assert stored(season).ranking_rule == "accepted_count" and not season_audited()
    with pytest.raises(season_settings.SettingsRefused) as service:
        season_settings.change_ranking(season, "cumulative_score", {}, reason="")
    assert service.value.message_dict == {"reason": ["Say why: the reason is kept in the audit trail."]}


# ---- dataset weights --------------------------------------------------------------------------------


def weights_form(rule, reason="levels count", **fields):
    return {"section": "weights", "weights-rule": rule, "weights-default": "1", "weights-reason": reason,
            **{f"weights-{key}": value for key, value in fields.items()}}


def test_the_weight_rule_is_a_form_of_fields_per_rule_and_its_change_is_audited(signed_in, season, organizer, alice):
    sample = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU")
    code = sample.issue.code
    response = signed_in.post(PAGE, weights_form("level", **{
        "default": "0.5", "level-3": "5", "level-4": "8", "level-1": "",
        "framework-paddle": "not read",  # another rule's field: never read, never refused
        "sample-code-0": code.lower(), "sample-weight-0": "2.5"}))
    assert response.status_code == 302 and response["Location"] == f"{PAGE}#weights"
    after = stored(season)
    assert (after.dataset_weight_rule, after.dataset_weight_settings) == (
        "level", {"default": 0.5, "weights": {"3": 5.0, "4": 8.0}, "samples": {code: 2.5}})
    [entry] = entries("season.weights_changed")
    assert (entry.before, entry.reason, entry.actor) == ({"rule": "uniform", "settings": {}}, "levels count",
                                                         organizer.user)
    assert entry.after == {"rule": "level", "settings": after.dataset_weight_settings}
    page = signed_in.get(PAGE).content.decode()  # the form shows what is stored
    assert 'name="weights-level-3" value="5.0"' in page
    assert f'name="weights-sample-code-0" value="{code}"' in page


def test_operator_weights_are_rows_of_name_and_weight(signed_in, season):
    done = signed_in.post(PAGE, weights_form("operator", **{
        "operator-key-0": "Fused Attention", "operator-weight-0": "4", "operator-key-1": "", "operator-weight-1": "",
        "operator-key-2": "softmax", "operator-weight-2": "0"}))
    assert done.status_code == 302
    assert stored(season).dataset_weight_settings["weights"] == {"fused attention": 4.0, "softmax": 0.0}
    page = signed_in.get(PAGE).content.decode()
    assert 'name="weights-operator-key-0" value="fused attention"' in page
    assert 'name="weights-operator-key-4"' in page  # the two rows set and three empty ones


@pytest.mark.parametrize("fields, field, message", [
    ({"level-3": "2000"}, "weights-level-3", "less than or equal to 1000"),
    ({"level-2": "heavy"}, "weights-level-2", "Enter a number."),
    ({"default": "-1"}, "weights-default", "greater than or equal to 0"),
    ({"default": ""}, "weights-default", "This field is required."),
    ({"sample-code-0": "NOSUCH", "sample-weight-0": "2"}, "weights-sample-code-0", "NOSUCH is not an issue of season S1."),
    ({"sample-code-0": "abc", "sample-weight-0": "2"}, "weights-sample-code-0", "six capital letters"),
    ({"sample-code-1": "", "sample-weight-1": "2"}, "weights-sample-code-1", "Say which issue this weight is for."),
    ({"reason": ""}, "weights-reason", "Say why: the reason is kept in the audit trail."),
])
def test_bad_weight_settings_show_next_to_their_field_and_change_nothing(signed_in, season, fields, field, message):
    form = weights_form("level", **fields)
    if "reason" in fields:
        form["weights-reason"] = fields["reason"]
    refused = signed_in.post(PAGE, form)
    assert refused.status_code == 400 and message in field_errors(refused, field)
    assert stored(season).dataset_weight_rule == "uniform" and not season_audited()


def test_an_operator_named_twice_or_without_a_weight_is_shown_on_its_row(signed_in, season):
    refused = signed_in.post(PAGE, weights_form("operator", **{
        "operator-key-0": "ReLU", "operator-weight-0": "2", "operator-key-1": " relu ", "operator-weight-1": "3",
        "operator-key-2": "gelu", "operator-weight-2": ""}))
    assert refused.status_code == 400
    assert "relu is named twice." in field_errors(refused, "weights-operator-key-1")
    assert "Give gelu a weight, or empty the row." in field_errors(refused, "weights-operator-weight-2")
    assert 'value=" relu "' in refused.content.decode()  # what was typed stays
    assert stored(season).dataset_weight_rule == "uniform"


# ---- the scoreboard freeze -----------------------------------------------------------------------------


def test_the_board_is_frozen_and_thawed_from_the_page_with_a_reason(signed_in, season, organizer):
    frozen = signed_in.post(FREEZE, {"freeze-action": "freeze", "freeze-reason": "the last hour"}, follow=True)
    assert frozen.redirect_chain == [(f"{PAGE}#freeze", 302)]
    assert "The scoreboard of S1 is frozen" in frozen.content.decode()
    freeze = ScoreboardFreeze.objects.get(season=season)
    assert freeze.frozen_by == organizer.user
    state = frozen.content.decode().split('id="freeze-state"')[1].split("</p>")[0]
    assert "Frozen since" in state and "by organizer" in state
    [entry] = entries("scoreboard.frozen")
    assert (entry.reason, entry.actor, entry.after) == ("the last hour", organizer.user,
                                                        {"frozen_at": freeze.frozen_at.isoformat()})
    # a second freeze (two organizers at once): refused with the reason, the first freeze stays
    again = signed_in.post(FREEZE, {"freeze-action": "freeze", "freeze-reason": "me too"})
    assert again.status_code == 400 and "the scoreboard of S1 is already frozen" in again.content.decode()
    assert ScoreboardFreeze.objects.get(season=season).pk == freeze.pk
    thawed = signed_in.post(FREEZE, {"freeze-action": "thaw", "freeze-reason": "results are out"}, follow=True)
    assert "The scoreboard of S1 is thawed" in thawed.content.decode()
    assert not ScoreboardFreeze.objects.exists()
    [entry] = entries("scoreboard.unfrozen")
    assert (entry.reason, entry.before) == ("results are out", {"frozen_at": freeze.frozen_at.isoformat()})


@pytest.mark.parametrize("form, message", [
    ({"freeze-action": "freeze", "freeze-reason": "   "}, "Say why: the reason is kept in the audit trail."),
    ({"freeze-reason": "no button"}, "Say whether to freeze or to thaw the scoreboard."),
    ({"freeze-action": "thaw", "freeze-reason": "not frozen"}, "the scoreboard of S1 is not frozen"),
])
def test_a_freeze_without_a_reason_or_an_action_is_refused(signed_in, season, form, message):
    refused = signed_in.post(FREEZE, form)
    assert refused.status_code == 400 and message in refused.content.decode().split('id="freeze-form"')[1]
    assert not ScoreboardFreeze.objects.exists() and not season_audited()


# ---- reasons wherever a weight rule or an export comes from ----------------------------------------------


def test_a_weight_rule_change_without_a_reason_is_refused_by_the_service_and_the_api(client, season, organizer):
    for reason in ("", "   "):
        with pytest.raises(weights.WeightSettingsError, match="say why the weight rule of S1 changes"):
            weighting.change_weights(season, "level", {"weights": {"3": 5}}, actor=organizer.user, reason=reason)
    _, token = accounts.create_api_token(organizer)
    headers = {"Authorization": f"Bearer {token}"}
    for body in ({"rule": "level"}, {"rule": "level", "reason": " "}):
        assert client.put("/api/v1/seasons/S1/weights", body, content_type="application/json",
                          headers=headers).status_code == 422
    assert stored(season).dataset_weight_rule == "uniform" and not season_audited()


def test_a_dataset_export_without_a_reason_is_refused_everywhere_and_writes_nothing(client, season, organizer,
                                                                                    alice, export_dir):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU")
    with pytest.raises(datasets.dataset_export.DatasetExportError, match="exporting a dataset needs a reason"):
        datasets.export_season(season, actor=organizer.user, reason=" ")
    client.force_login(organizer.user)
    page = client.post("/organizer/seasons/S1/dataset/export/", {"reason": ""}, follow=True).content.decode()
    assert "exporting a dataset needs a reason (kept in the audit trail)" in page
    _, token = accounts.create_api_token(organizer)
    api = client.post("/api/v1/seasons/S1/datasets", {}, content_type="application/json",
                      headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 422
    assert not DatasetExport.objects.exists() and not export_dir.exists() and not AuditEntry.objects.filter(
        action="dataset.exported").exists()


def test_the_service_refuses_a_missing_reason_and_unknown_fields(season):
    with pytest.raises(season_settings.SettingsRefused) as refused:
        season_settings.change_settings(season, {"is_open": False}, reason="")
    assert "reason" in refused.value.message_dict
    with pytest.raises(ValueError, match="not a season setting: admission"):
        season_settings.change_settings(season, {"admission": "invite_only"}, reason="x")
    with pytest.raises(season_settings.SettingsRefused) as refused:
        season_settings.change_settings(season, {"ends_at": season.starts_at - timedelta(days=1)}, reason="x")
    assert refused.value.message_dict == {"ends_at": ["The season must end after it starts."]}
    assert stored(season).is_open and not season_audited()
