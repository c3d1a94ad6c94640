"""Passwords chosen on the site are checked by Django's validators (messages in both languages), and
repeated failed sign-ins are refused per account and per client address, counted in the database."""
import html
from datetime import timedelta

import pytest
from django.core.management import call_command

from submissions import models

EN = {"Accept-Language": "en-US,en;q=0.9"}
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
REGISTRATION = {"username": "carol", "display_name": "Carol", "email": "carol@example.org", "accept_agreement": "on"}


def text(response):
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("headers, messages", [
    (EN, ["This password is too short. It must contain at least 10 characters.", "This password is too common.",
          "This password is entirely numeric.", "Your password must contain at least 10 characters."]),
    (ZH, ["密码长度太短。密码必须包含至少 10 个字符。", "这个密码太常见了。", "密码只包含数字。",
          "你的密码必须包含至少 10 个字符。"]),
])
def test_registration_refuses_a_weak_password_with_clear_messages(client, db, headers, messages):
    refused = client.post("/accounts/register/", dict(REGISTRATION, password1="123", password2="123"), headers=headers)
    assert refused.status_code == 200
    page = text(refused)
    for message in messages:  # the three failures, and the rule shown as the field's help
        assert message in page
    assert not models.Contestant.objects.exists()
    too_like_the_name = client.post("/accounts/register/", dict(REGISTRATION, password1="carol.example",
                                                                  password2="carol.example"), headers=headers)
    assert too_like_the_name.status_code == 200 and not models.Contestant.objects.exists()
    accepted = client.post("/accounts/register/", dict(REGISTRATION, password1="Kernels-run-fast-42",
                                                       password2="Kernels-run-fast-42"), headers=headers)
    assert accepted.status_code == 302 and models.Contestant.objects.filter(user__username="carol").exists()


def sign_in(client, username, password, headers=EN, **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, headers=headers, **extra)


def signed_in(client):
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("headers, refusal", [
    (EN, "Too many failed sign-ins for this account: try again after"),
    (ZH, "此账号登录失败次数过多"),
])
def test_failed_sign_ins_lock_the_account_until_they_leave_the_window(client, alice, bob, settings, headers, refusal):
    for _ in range(settings.LOGIN_FAILURES_PER_ACCOUNT):
        assert sign_in(client, "alice", "not-her-password", headers).status_code == 200

    locked = sign_in(client, "alice", "pw-alice-123", headers)  # the right password, refused unchecked
    assert locked.status_code == 200 and refusal in text(locked) and not signed_in(client)
    assert models.LoginFailure.objects.filter(account="alice").count() == settings.LOGIN_FAILURES_PER_ACCOUNT
    assert refusal in text(sign_in(client, "ALICE", "pw-alice-123", headers))  # the name's case changes nothing
    # refused attempts are not counted: the lock ends on its own however often someone keeps trying
    assert models.LoginFailure.objects.filter(account="alice").count() == settings.LOGIN_FAILURES_PER_ACCOUNT

    assert sign_in(client, "bob", "pw-bob-123", headers).status_code == 302  # another account, same address
    client.logout()

    window = timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_SECONDS)
    oldest = models.LoginFailure.objects.order_by("created_at").first()
    models.LoginFailure.objects.filter(pk=oldest.pk).update(created_at=oldest.created_at - window)
    assert sign_in(client, "alice", "pw-alice-123", headers).status_code == 302 and signed_in(client)
    client.logout()

    # a successful sign-in ends the account's count: the failures still in the window no longer add up
    for _ in range(settings.LOGIN_FAILURES_PER_ACCOUNT - 1):
        sign_in(client, "alice", "typo", headers)
    assert sign_in(client, "alice", "pw-alice-123", headers).status_code == 302


def test_failed_sign_ins_from_one_address_lock_that_address_only(client, alice, bob, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 3
    for name in ("mallory", "trent", "victor"):  # a different account each time: no account limit is reached
        sign_in(client, name, "guess", REMOTE_ADDR="203.0.113.7")
    refused = sign_in(client, "bob", "pw-bob-123", REMOTE_ADDR="203.0.113.7")
    assert "Too many failed sign-ins from your network address" in text(refused) and not signed_in(client)
    assert sign_in(client, "bob", "pw-bob-123", REMOTE_ADDR="203.0.113.8").status_code == 302


def test_behind_a_trusted_proxy_the_client_address_counts(client, alice, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 2
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    # nginx appends the address it saw; what the client wrote before it is not believed
    for forged in ("198.51.100.1", "198.51.100.2"):
        sign_in(client, "nobody", "guess", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=f"{forged}, 203.0.113.9")
    assert set(models.LoginFailure.objects.values_list("address", flat=True)) == {"203.0.113.9"}
    assert "network address" in text(sign_in(client, "alice", "pw-alice-123", REMOTE_ADDR="127.0.0.1",
                                             HTTP_X_FORWARDED_FOR="203.0.113.9"))
    assert sign_in(client, "alice", "pw-alice-123", REMOTE_ADDR="127.0.0.1",
                   HTTP_X_FORWARDED_FOR="203.0.113.10").status_code == 302
    client.logout()
    # a request that does not come through the proxy cannot choose the address it is counted under
    settings.TRUSTED_PROXIES = []
    sign_in(client, "nobody", "guess", REMOTE_ADDR="192.0.2.5", HTTP_X_FORWARDED_FOR="203.0.113.50")
    assert models.LoginFailure.objects.filter(address="192.0.2.5").count() == 1


def test_the_admin_sign_in_is_throttled_too(client, organizer, settings):
    for _ in range(settings.LOGIN_FAILURES_PER_ACCOUNT):
        client.post("/admin/login/", {"username": "organizer", "password": "wrong"}, headers=EN)
    locked = client.post("/admin/login/?next=/admin/", {"username": "organizer", "password": "pw-org-123"}, headers=EN)
    assert "Too many failed sign-ins for this account" in text(locked) and not signed_in(client)


def test_the_demo_users_sign_in_with_the_demo_password_and_the_demo_review_says_why(client, db):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    for name in ("alice", "bob", "organizer"):
        assert sign_in(client, name, "demo-password").status_code == 302
        client.logout()
    # the demo accepts a sample before any agent judged it: an override, with its reason, audited
    review = models.Review.objects.get()
    assert review.acceptance_override.startswith("demo data")
    assert models.AuditEntry.objects.filter(action="review.acceptance_overridden", reason=review.acceptance_override).exists()
