"""A season's submission limits and an invite code's use limit have a ceiling, the same on every
database: past it, the service refuses with the ceiling named (the API answers 422) and stores nothing.
A use limit of 3,000,000,000 failed on PostgreSQL's integer column with a server error."""
import json

import pytest

from submissions.models import AuditEntry, InviteCode, Season
from submissions.services import accounts, season_access, season_settings
from submissions.services.season_access import MAX_USES_PER_INVITE
from submissions.services.season_settings import MAX_SUBMISSION_LIMIT

pytestmark = pytest.mark.django_db

HUGE = 3_000_000_000


@pytest.mark.parametrize("field", ["max_submissions_per_hour", "max_submissions_per_day"])
def test_a_submission_limit_past_the_ceiling_is_refused_naming_it(season, organizer, field):
    with pytest.raises(season_settings.SettingsRefused) as refused:
        season_settings.change_settings(season, {field: HUGE}, actor=organizer.user, reason="no limit")
    assert str(MAX_SUBMISSION_LIMIT) in " ".join(refused.value.message_dict[field])
    assert getattr(Season.objects.get(pk=season.pk), field) is None
    assert not AuditEntry.objects.filter(object_type="season").exists()
    season_settings.change_settings(season, {field: MAX_SUBMISSION_LIMIT}, actor=organizer.user, reason="at most")
    assert getattr(Season.objects.get(pk=season.pk), field) == MAX_SUBMISSION_LIMIT


def test_an_invite_codes_use_limit_past_the_ceiling_is_refused_by_the_service_and_the_api(
        client, season, organizer):
    with pytest.raises(season_access.AccessChangeRefused) as refused:
        season_access.create_invites(season, actor=organizer.user, reason="workshop", max_uses=HUGE)
    assert str(MAX_USES_PER_INVITE) in str(refused.value)
    raw = accounts.create_api_token(organizer)[1]
    answer = client.post("/api/v1/seasons/S1/access/invites", json.dumps({"max_uses": HUGE, "reason": "workshop"}),
                         content_type="application/json", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 422
    assert not InviteCode.objects.exists()
    (code,) = season_access.create_invites(season, actor=organizer.user, reason="at most", max_uses=MAX_USES_PER_INVITE)
    assert code.max_uses == MAX_USES_PER_INVITE
