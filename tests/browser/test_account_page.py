"""In Chromium, in both languages: the account page's token form names its field in the reader's language
and keeps a name to its column's length (a longer one sent anyway is refused with a message); registering
refuses a display name another contestant is shown as, or one holding invisible or text-direction characters."""
import pytest
from django.contrib.auth.tokens import default_token_generator
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from submissions.models import Contestant
from submissions.services import accounts
from tests.browser.test_every_page import log_in_browser
from tests.browser.test_public_pages import shoot

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = {"en-US": ("token name", "Create a token", "A token's name has at most 100 characters; this one has 150."),
         "zh-CN": ("令牌名称", "创建令牌", "令牌名称最多 100 个字符；此名称有 150 个。")}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_the_token_form_names_its_field_and_keeps_a_name_to_its_length(live_server, page, language):
    """The walk of issue 12: the field read "name" on the Chinese page, took any length, and a name past
    100 characters was a server error on PostgreSQL."""
    label, create, too_long = WORDS[language]
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    log_in_browser(page, live_server, alice.user)
    page.goto(f"{live_server.url}/account/")
    field = page.get_by_label(label)
    assert field.get_attribute("placeholder") == label
    field.fill("n" * 150)
    assert field.input_value() == "n" * 100  # Chromium stops at the column's length
    page.get_by_role("button", name=create).click()
    page.wait_for_load_state()
    assert alice.api_tokens.get().name == "n" * 100

    page.get_by_label(label).evaluate("e => { e.removeAttribute('maxlength'); e.value = 'n'.repeat(150); }")
    page.get_by_role("button", name=create).click()
    page.wait_for_load_state()
    assert too_long in page.locator(".message.error").inner_text()
    assert alice.api_tokens.count() == 1
    assert page.console_errors == []


REGISTER = {"en-US": ("Register", "Another contestant is shown as “Alice”; pick a name of your own.",
                      "Invisible or text-direction characters are not allowed here (found U+202E)."),
            "zh-CN": ("注册", "已有选手显示为“Alice”；请另选一个名称。", "此处不允许不可见字符或改变文字方向的字符（发现 U+202E）。")}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_registering_refuses_another_contestants_name_and_hidden_characters(live_server, page, language):
    """The walk of issue 12 registered a second "Alice" (as "alice" or "ALICE " too) and "Carol\u202e evil",
    which the leaderboard shows as "Carol live"."""
    button, taken, hidden = REGISTER[language]
    accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")

    def register(display_name, affiliation=""):
        page.goto(f"{live_server.url}/accounts/register/")
        page.fill("input[name=username]", "carol")
        page.fill("input[name=password1]", "Sup3r-secret-pw")
        page.fill("input[name=password2]", "Sup3r-secret-pw")
        page.fill("input[name=display_name]", display_name)
        page.fill("input[name=affiliation]", affiliation)
        page.check("input[name=accept_agreement]")
        page.get_by_role("button", name=button, exact=True).click()
        page.wait_for_load_state()
        return page.locator("main .errorlist").all_inner_texts()

    assert taken in register("ALICE ")
    assert register("alice") != [] and register("Alice") != []
    assert hidden in register("Carol\u202e evil")
    assert hidden.replace("202E", "200B") in register("Carol", affiliation="Fudan\u200b")
    assert not Contestant.objects.filter(user__username="carol").exists()
    assert register("Carol") == []
    assert Contestant.objects.get(user__username="carol").display_name == "Carol"
    assert page.console_errors == []


NEW_TOKEN = {"en-US": ("Create a token", "Your new API token (shown only once)", "Copy", "Copied"),
             "zh-CN": ("创建令牌", "你的新 API 令牌（仅显示一次）", "复制", "已复制")}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_new_token_is_shown_once_in_a_monospace_font_with_a_copy_button(live_server, page, language):
    """The walk: the token stood in a proportional font inside a sentence (l, 1 and I alike), with
    nothing to copy it whole."""
    create, heading, copy, copied = NEW_TOKEN[language]
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    log_in_browser(page, live_server, alice.user)
    page.goto(f"{live_server.url}/account/")
    page.get_by_role("button", name=create).click()
    page.wait_for_load_state()
    shown = page.locator("#new-token code.token")
    token = shown.inner_text()
    assert heading in page.locator("#new-token").inner_text()
    assert token.startswith(alice.api_tokens.get().prefix) and " " not in token
    font = shown.evaluate("e => getComputedStyle(e).fontFamily")
    assert "mono" in font.lower(), font
    page.get_by_role("button", name=copy, exact=True).click()
    page.get_by_role("button", name=copied, exact=True).wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == token
    shoot(page, f"account-new-token-{language[:2]}")
    page.reload()
    assert page.locator("#new-token").count() == 0 and token not in page.content()  # once only
    assert page.console_errors == []


WEAK = {"en-US": ("Register", "Set the password", "This password is entirely numeric.",
                  "The two password fields didn’t match."),
        "zh-CN": ("注册", "设置密码", "密码只包含数字。", "输入的两个密码不一致。")}


def errors_of_field(page, name):
    """The error lines shown with a field of a form drawn by as_div (label, help, errors, input)."""
    return page.locator(f"form div:has(> input[name={name}]) .errorlist li").all_inner_texts()


def assert_the_error_stands_between_the_password_and_its_confirmation(page, first, second, error):
    error_box = page.locator(".errorlist li", has_text=error).bounding_box()
    first_box = page.locator(f"label[for=id_{first}]").bounding_box()
    second_box = page.locator(f"label[for=id_{second}]").bounding_box()
    assert first_box["y"] < error_box["y"] < second_box["y"], (first_box, error_box, second_box)


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_weak_password_is_refused_under_the_password_field_not_its_confirmation(live_server, page, language):
    """The walk: "This password is too common" stood under "Password confirmation", on registration and
    on a password reset alike. A mismatch stays with the confirmation, where it belongs."""
    register, set_password, numeric, mismatch = WEAK[language]
    page.goto(f"{live_server.url}/accounts/register/")
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password1]", "3141592653")
    page.fill("input[name=password2]", "3141592653")
    page.check("input[name=accept_agreement]")
    page.get_by_role("button", name=register, exact=True).click()
    page.wait_for_load_state()
    assert numeric in errors_of_field(page, "password1") and errors_of_field(page, "password2") == []
    assert_the_error_stands_between_the_password_and_its_confirmation(page, "password1", "password2", numeric)
    page.fill("input[name=password1]", "Sup3r-secret-pw")
    page.fill("input[name=password2]", "Sup3r-secret-pw!")
    page.check("input[name=accept_agreement]")
    page.get_by_role("button", name=register, exact=True).click()
    page.wait_for_load_state()
    assert errors_of_field(page, "password2") == [mismatch] and errors_of_field(page, "password1") == []

    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    uid = urlsafe_base64_encode(force_bytes(alice.user.pk))
    page.goto(f"{live_server.url}/accounts/reset/{uid}/{default_token_generator.make_token(alice.user)}/")
    page.fill("input[name=new_password1]", "3141592653")
    page.fill("input[name=new_password2]", "3141592653")
    page.get_by_role("button", name=set_password, exact=True).click()
    page.wait_for_load_state()
    assert numeric in errors_of_field(page, "new_password1") and errors_of_field(page, "new_password2") == []
    assert_the_error_stands_between_the_password_and_its_confirmation(page, "new_password1", "new_password2", numeric)
    shoot(page, f"password-reset-weak-{language[:2]}")
    assert page.console_errors == []
