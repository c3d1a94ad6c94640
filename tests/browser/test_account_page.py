"""In Chromium, in both languages: the account page's token form names its field in the reader's language
and keeps a name to its column's length; a longer one sent anyway is refused with a message."""
import pytest

from submissions.services import accounts
from tests.browser.test_every_page import log_in_browser

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
