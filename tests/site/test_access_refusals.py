"""The access page's refusals: an organizer's account is never banned (organizers may always submit,
as the page says; a ban refused their submissions), and the page writes a refusal as a sentence, as
the settings page does (the services' clauses started in lower case there)."""
import html
import json

import pytest

from submissions.models import AuditEntry, SeasonBan
from tests.site.test_season_access import bearer

pytestmark = pytest.mark.django_db

EN, ZH = {"Accept-Language": "en"}, {"Accept-Language": "zh-hans"}


@pytest.fixture
def signed_in(client, organizer):
    client.force_login(organizer.user)
    return client


@pytest.mark.parametrize("account", ["organizer", "other"])
def test_an_organizers_account_is_never_banned_on_the_page(signed_in, season, organizer, account):
    from submissions.services import accounts

    if account == "other":
        accounts.register_contestant("other", "pw-other-123", display_name="Other", is_staff=True)
    response = signed_in.post("/organizer/seasons/S1/access/bans/", {"account": account, "reason": "testing"},
                              headers=EN)
    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert f'id="ban-error">An organizer\'s account ({account}) cannot be banned: organizers may always submit.' in page
    assert f'value="{account}"' in page and 'value="testing"' in page  # what was typed stays
    assert not SeasonBan.objects.exists() and not AuditEntry.objects.filter(action="access.banned").exists()


def test_the_api_refuses_to_ban_an_organizers_account(client, season, organizer):
    response = client.post("/api/v1/seasons/S1/access/bans", json.dumps({"account": "organizer", "reason": "x"}),
                           content_type="application/json", headers=bearer(organizer))
    assert response.status_code in (400, 422) and "cannot be banned" in response.content.decode()
    assert not SeasonBan.objects.exists()


def test_the_access_pages_refusals_are_sentences(signed_in, season):
    response = signed_in.post("/organizer/seasons/S1/access/admit/", {"accounts": " ", "reason": "team"}, headers=EN)
    assert response.status_code == 400
    assert 'id="admit-error">Name at least one account (its user name or display name).</p>' in \
        response.content.decode()
    zh = signed_in.post("/organizer/seasons/S1/access/admit/", {"accounts": " ", "reason": "team"}, headers=ZH)
    error = zh.content.decode().split('id="admit-error">')[1].split("</p>")[0]
    assert error.endswith("。") and not error.endswith(".。")


def test_the_join_pages_refusal_is_a_sentence(client, season, alice):
    season.admission = "invite_only"
    season.save()
    client.force_login(alice.user)
    response = client.post("/seasons/S1/join/", {"code": ""}, headers=EN)
    assert 'id="join-error">Enter the invite code the organizers gave you.</p>' in response.content.decode()
