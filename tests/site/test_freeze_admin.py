"""Deleting a freeze in the Django admin is a thaw like the settings page's: audited, through the one
service that also posts the pull requests' held verdict tables, whether one freeze is deleted from its
page or several with the list's "delete selected" action."""
import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import ScoreboardFreeze
from leaderboard.services import freeze_scoreboard
from submissions.models import AuditEntry, Season

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456789"))
    return client


def thaws():
    return list(AuditEntry.objects.filter(action="scoreboard.unfrozen").values_list("reason", flat=True))


def test_deleting_a_freeze_on_its_page_thaws_through_the_service(admin_client, monkeypatch):
    posted = []
    monkeypatch.setattr("leaderboard.services.pr_comments.post_held_verdicts",
                        lambda season, frozen_since: posted.append(season.code))
    season = Season.objects.create(code="S1", name="One")
    freeze_scoreboard(season, reason="final hour")
    freeze = ScoreboardFreeze.objects.get(season=season)
    response = admin_client.post(f"/admin/leaderboard/scoreboardfreeze/{freeze.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not ScoreboardFreeze.objects.exists() and thaws() == ["unfrozen in admin"] and posted == ["S1"]


def test_deleting_freezes_from_the_list_thaws_each_through_the_service(admin_client, monkeypatch):
    posted = []
    monkeypatch.setattr("leaderboard.services.pr_comments.post_held_verdicts",
                        lambda season, frozen_since: posted.append(season.code))
    seasons = [Season.objects.create(code=code, name=code) for code in ("S1", "S2")]
    for season in seasons:
        freeze_scoreboard(season, reason="final hour")
    chosen = list(ScoreboardFreeze.objects.values_list("pk", flat=True))
    response = admin_client.post("/admin/leaderboard/scoreboardfreeze/",
                                 {"action": "delete_selected", "_selected_action": chosen, "post": "yes"})
    assert response.status_code == 302
    assert not ScoreboardFreeze.objects.exists()
    assert thaws() == ["unfrozen in admin"] * 2 and sorted(posted) == ["S1", "S2"]
