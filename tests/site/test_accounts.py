"""Accounts: registration with the agreement, re-acceptance after a new version, profile, tokens, password reset."""
import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db.models.signals import pre_save

from submissions.models import AuditEntry, Contestant
from submissions.services import accounts, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import submit

REGISTRATION = {"username": "carol", "password1": "A-long-pass-42", "password2": "A-long-pass-42",
                "display_name": "Carol", "email": "carol@example.org"}


def test_registration_requires_the_agreement_and_records_its_version_and_time(client, db, settings):
    refused = client.post("/accounts/register/", REGISTRATION)
    assert refused.status_code == 200 and "You must accept the contest agreement" in refused.content.decode()
    assert not Contestant.objects.exists()
    assert client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on")).status_code == 302
    carol = Contestant.objects.get(user__username="carol")
    assert carol.agreement_version == settings.CONTEST_AGREEMENT_VERSION and carol.agreement_accepted_at is not None
    assert AuditEntry.objects.filter(action="agreement.accepted", object_id=str(carol.pk)).exists()


def test_a_new_agreement_version_blocks_submitting_until_accepted(client, season, alice, settings,
                                                                   django_capture_on_commit_callbacks):
    settings.CONTEST_AGREEMENT_VERSION = "2026-2"
    issue = submitting.open_issue(season, alice, title="ReLU")
    try:
        submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    except submitting.SubmissionRefused as exc:
        assert "accept the contest agreement (version 2026-2)" in str(exc)
    else:
        raise AssertionError("a submission without the current agreement was accepted")
    client.force_login(alice.user)
    assert "before your next submission" in client.get("/account/").content.decode()
    page = client.post("/account/agreement/", {}, follow=True).content.decode()
    assert "Tick the box" in page
    client.post("/account/agreement/", {"accept": "yes"})
    alice.refresh_from_db()
    assert alice.agreement_version == "2026-2"
    assert submit(django_capture_on_commit_callbacks, alice, issue, valid_files()).pk


def test_profile_edit_with_handles_and_validation(client, alice):
    client.force_login(alice.user)
    fields = {"display_name": "Alice L.", "affiliation": "THU", "gitee_handle": "alice-gitee",
              "gitlink_handle": "alice-gl", "github_handle": "alice-gh"}
    assert client.post("/account/", fields).status_code == 302
    alice.refresh_from_db()
    assert (alice.display_name, alice.gitee_handle, alice.gitlink_handle, alice.github_handle) == (
        "Alice L.", "alice-gitee", "alice-gl", "alice-gh")
    blank = client.post("/account/", dict(fields, display_name="   "))
    assert blank.status_code == 200 and "This field is required" in blank.content.decode()
    alice.refresh_from_db()
    assert alice.display_name == "Alice L."


def test_tokens_are_shown_once_listed_by_prefix_and_revocable(client, alice, bob):
    client.force_login(alice.user)
    page = client.post("/account/tokens/", {"name": "ci"}, follow=True).content.decode()
    raw = re.search(r'<code class="token" id="new-token-text">(\S+)</code>', page).group(1)
    token = alice.api_tokens.get()
    assert token.token_hash != raw and f"{raw[:8]}…" in page
    assert client.get("/api/v1/submissions/1", headers={"Authorization": f"Bearer {raw}"}).status_code == 404
    client.force_login(bob.user)
    assert "No such active token" in client.post(f"/account/tokens/{token.pk}/revoke/", follow=True).content.decode()
    client.force_login(alice.user)
    assert "Token revoked" in client.post(f"/account/tokens/{token.pk}/revoke/", follow=True).content.decode()
    assert client.get("/api/v1/submissions/1", headers={"Authorization": f"Bearer {raw}"}).status_code == 401
    assert "revoked" in client.get("/account/").content.decode()


def test_password_reset_by_mail(client, db):
    client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on"))
    client.post("/accounts/logout/")
    assert client.post("/accounts/password_reset/", {"email": "carol@example.org"}).status_code == 302
    (message,) = mail.outbox
    assert message.subject == "GPU CodeForces: reset your password" and message.to == ["carol@example.org"]
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", message.body).group(1)
    form = client.get(link, follow=True)
    assert form.status_code == 200 and "Choose a new password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "Another-pass-77", "new_password2": "Another-pass-77"})
    assert done.status_code == 302
    assert client.login(username="carol", password="Another-pass-77")
    assert "invalid or was already used" in client.get(link, follow=True).content.decode()


def test_a_token_name_longer_than_its_column_is_refused_with_a_message(client, alice):
    """The walk of issue 12: a 500-character name was stored on SQLite and a server error on PostgreSQL."""
    client.force_login(alice.user)
    response = client.post("/account/tokens/", {"name": "n" * 500}, follow=True)
    assert response.status_code == 200
    assert "A token&#x27;s name has at most 100 characters; this one has 500." in response.content.decode()
    assert not alice.api_tokens.exists()
    client.post("/account/tokens/", {"name": "n" * 100})
    assert alice.api_tokens.get().name == "n" * 100


def test_the_profile_keeps_a_name_of_ones_own_without_hidden_characters(client, alice, bob):
    client.force_login(bob.user)
    fields = {"display_name": "Bob", "affiliation": "", "gitee_handle": "", "gitlink_handle": "", "github_handle": ""}
    for display_name, affiliation, problem in [
            ("alice", "", "Another contestant is shown as “Alice”"),
            ("Bob\u202e", "", "found U+202E"), ("Bob", "ZJU\u2066", "found U+2066")]:
        response = client.post("/account/", dict(fields, display_name=display_name, affiliation=affiliation))
        assert response.status_code == 200 and problem in response.content.decode(), display_name
    bob.refresh_from_db()
    assert (bob.display_name, bob.affiliation) == ("Bob", "")  # nothing saved
    assert client.post("/account/", dict(fields, display_name="BOB", affiliation="浙江大学")).status_code == 302
    bob.refresh_from_db()
    assert (bob.display_name, bob.affiliation) == ("BOB", "浙江大学")  # his own name, another case


def test_the_profile_refuses_a_pull_request_handle_another_contestant_has(client, alice, bob):
    """A host's webhook submits a pull request for the contestant with its author's handle: taking
    another's handle would take their pull requests' intake (and put B's name on A's PRs)."""
    Contestant.objects.filter(pk=alice.pk).update(github_handle="alice-gh", gitee_handle="alice-gitee")
    client.force_login(bob.user)
    fields = {"display_name": "Bob", "affiliation": "", "gitee_handle": "", "gitlink_handle": "", "github_handle": ""}
    for field, handle, host in [("github_handle", "ALICE-GH", "GitHub"), ("gitee_handle", " alice-gitee ", "Gitee")]:
        response = client.post("/account/", dict(fields, **{field: handle}))
        assert response.status_code == 200, field
        assert f"Another contestant has the {host} handle “{handle.strip()}”" in response.content.decode(), field
    bob.refresh_from_db()
    assert (bob.github_handle, bob.gitee_handle) == ("", "")
    assert client.post("/account/", dict(fields, github_handle="alice-gitee", gitee_handle="bob-gitee")).status_code == 302
    bob.refresh_from_db()  # a handle is another's on its own host only
    assert (bob.github_handle, bob.gitee_handle) == ("alice-gitee", "bob-gitee")
    client.force_login(alice.user)
    assert client.post("/account/", dict(fields, display_name="Alice", github_handle="Alice-GH")).status_code == 302


def test_registration_refuses_a_name_another_contestant_is_shown_as(client, alice):
    accounts.register_contestant("zed", "pw-zed-12345", display_name="Zorro")
    for fields, field, shown in [({"display_name": "ALICE"}, "display_name", "Alice"),  # another case
                                 ({"username": "zorro", "display_name": ""}, "username", "Zorro")]:
        response = client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on", **fields))
        assert response.status_code == 200, field
        assert f"Another contestant is shown as “{shown}”" in response.content.decode(), field
    assert Contestant.objects.count() == 2


def test_registration_refuses_an_email_address_another_account_has_whatever_the_case(client, db):
    accounts.register_contestant("dave", "pw-dave-12345", email="Carol@Example.org")
    with pytest.raises(accounts.AccountRefused, match="already uses the e-mail address carol@EXAMPLE.org"):
        accounts.register_contestant("erin", "pw-erin-12345", email="carol@EXAMPLE.org")
    for headers, refusal in [({"Accept-Language": "en"}, "Another account already uses the e-mail address "
                                                         "CAROL@example.ORG; sign in to it, or reset its password."),
                             ({"Accept-Language": "zh-CN"}, "已有账户使用邮箱 CAROL@example.ORG")]:
        response = client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on", email="CAROL@example.ORG"),
                               headers=headers)
        assert response.status_code == 200 and refusal in html.unescape(response.content.decode())
    assert not Contestant.objects.filter(user__username="carol").exists()
    assert get_user_model().objects.filter(email__iexact="carol@example.org").count() == 1
    # no address is no one's: accounts without one may be many
    accounts.register_contestant("erin", "pw-erin-12345")
    accounts.register_contestant("frank", "pw-frank-12345", email="")
    assert client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on", email="")).status_code == 302
    assert get_user_model().objects.filter(email="").count() == 3


def test_a_name_taken_between_the_form_s_check_and_the_insert_is_a_form_error_not_a_500(client, db):
    """Two registrations of one name at once: both forms find it free, the second INSERT fails. The other
    registration is made here just before this one's INSERT, in its transaction, as the race would."""
    user_model, raced = get_user_model(), []

    def the_other_registration_first(sender, instance, **kwargs):
        if instance.username == "carol" and not raced:
            raced.append(True)
            user_model.objects.create_user("carol", password="pw-other-12345")

    pre_save.connect(the_other_registration_first, sender=user_model)
    try:
        response = client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on", email=""),
                               headers={"Accept-Language": "en"})
    finally:
        pre_save.disconnect(the_other_registration_first, sender=user_model)
    assert raced and response.status_code == 200
    assert "The user name carol was taken a moment ago; pick another." in html.unescape(response.content.decode())
    assert not Contestant.objects.exists()  # (the other account went with this transaction: here it was inside it)


def test_a_password_reset_mails_the_one_account_of_its_address(client, db):
    """Django's reset mails every active account whose address matches, whatever the case: a second
    account that registered the address in other letters got a link to it too."""
    client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on"))
    client.post("/accounts/logout/")
    client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on", username="mallory",
                                            display_name="Mallory", email="CAROL@example.org"))
    client.post("/accounts/logout/")
    assert client.post("/accounts/password_reset/", {"email": "Carol@Example.org"}).status_code == 302
    (message,) = mail.outbox
    assert message.to == ["carol@example.org"] and "account carol." in message.body


def test_the_database_holds_one_account_per_address_whatever_the_case(db):
    """What no form check can see, two registrations of one address at one moment, the database refuses."""
    from django.db import IntegrityError, transaction

    user_model = get_user_model()
    user_model.objects.create_user("dave", password="pw-dave-12345", email="Carol@Example.org")
    with pytest.raises(IntegrityError), transaction.atomic():
        user_model.objects.create_user("erin", password="pw-erin-12345", email="carol@EXAMPLE.org")
    user_model.objects.create_user("frank", password="pw-frank-12345", email="")
    user_model.objects.create_user("gina", password="pw-gina-12345", email="")  # no address is no one's
    assert user_model.objects.count() == 3


def test_an_address_taken_between_the_form_s_check_and_the_insert_is_a_form_error_not_a_500(client, db):
    user_model, raced = get_user_model(), []

    def the_other_registration_first(sender, instance, **kwargs):
        if instance.username == "carol" and not raced:
            raced.append(True)
            user_model.objects.create_user("mallory", password="pw-other-12345", email="CAROL@example.org")

    pre_save.connect(the_other_registration_first, sender=user_model)
    try:
        response = client.post("/accounts/register/", dict(REGISTRATION, accept_agreement="on"),
                               headers={"Accept-Language": "en"})
    finally:
        pre_save.disconnect(the_other_registration_first, sender=user_model)
    assert raced and response.status_code == 200
    assert "Another account already uses the e-mail address carol@example.org" in html.unescape(response.content.decode())
    assert not user_model.objects.filter(username="carol").exists()


def test_an_organizer_giving_an_account_another_s_address_in_the_admin_gets_a_form_error(client, db):
    user_model = get_user_model()
    organizer = user_model.objects.create_superuser("root", password="pw-root-12345", email="root@example.org")
    bob = user_model.objects.create_user("bob", password="pw-bob-12345", email="bob@example.org")
    client.force_login(organizer)
    page = f"/admin/auth/user/{bob.pk}/change/"
    form = {"username": "bob", "first_name": "", "last_name": "", "is_active": "on",
            "date_joined_0": "2026-11-27", "date_joined_1": "10:00:00", "initial-date_joined_0": "2026-11-27",
            "initial-date_joined_1": "10:00:00"}
    refused = client.post(page, dict(form, email="ROOT@example.org"), headers={"Accept-Language": "en"})
    assert refused.status_code == 200
    assert "Another account already uses the e-mail address ROOT@example.org" in html.unescape(refused.content.decode())
    bob.refresh_from_db()
    assert bob.email == "bob@example.org"
    # its own address in other letters is no one else's
    assert client.post(page, dict(form, email="Bob@Example.org")).status_code == 302
    bob.refresh_from_db()
    assert bob.email == "Bob@example.org"  # (Django lowers the domain)
