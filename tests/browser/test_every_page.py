"""Every page of the site in Chromium, in both languages: its markup is balanced (no translated string
opens a tag it does not close, none shows a tag as text), it fits a 390 px wide phone, the error pages
wear the site's layout, and the language switch works without JavaScript."""
import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from submissions.services import accounts
from tests.browser.conftest import ARTIFACTS

pytestmark = pytest.mark.django_db(transaction=True)

LANGUAGES = ["en-US", "zh-CN"]
PHONE_WIDTH = 390
# Elements HTML lets a page leave open (the parser closes them) and those that never close.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
OPTIONAL_END = {"p", "li", "option", "tr", "td", "th", "thead", "tbody", "dt", "dd"}
# Markup that reached the reader as text: "&lt;code&gt;" in the source, "<code>" on the screen.
TAG_AS_TEXT = re.compile(r"</?(code|b|i|em|strong|a|span|div|p|br|small|pre)\b[^>]*>")


class TagBalance(HTMLParser):
    """The first unbalanced tag of a document, if any."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open, self.problems = [], []
        self.raw_text = []  # what the source escapes: its text, markup as it reads

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.open and self.open[-1][0] != tag and self.open[-1][0] in OPTIONAL_END:
            self.open.pop()
        if not self.open or self.open[-1][0] != tag:
            self.problems.append(f"</{tag}> at line {self.getpos()[0]} closes "
                                 f"{self.open[-1] if self.open else 'nothing'}")
            return
        self.open.pop()

    def handle_data(self, data):
        self.raw_text.append(data)

    def close(self):
        super().close()
        left = [t for t in self.open if t[0] not in OPTIONAL_END]
        if left:
            self.problems.append(f"never closed: {left}")


def log_in_browser(page, live_server, user):
    """The browser carries a session of `user` (made by Django's test client, stored in the database)."""
    client = Client()
    client.force_login(user)
    host = live_server.url.split("//", 1)[1].split(":")[0]
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "domain": host, "path": "/"}])


def visit_every_page(page, live_server, pages):
    """Yields (path, the HTML the server sent) for each visitor page, then each organizer page."""
    for path in pages["visitor"]:
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        yield path, response.text()
    log_in_browser(page, live_server, pages["organizer_user"])
    for path in pages["organizer"]:
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        yield path, response.text()


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_has_balanced_markup(live_server, page, every_page, language):
    problems = {}
    for path, html in visit_every_page(page, live_server, every_page):
        balance = TagBalance()
        balance.feed(html)
        balance.close()
        found = list(balance.problems)
        text = page.locator("body").inner_text()
        shown = TAG_AS_TEXT.findall(text)
        if shown:
            found.append(f"tags shown as text: {shown}")
        if "{#" in text or "{%" in text:
            found.append("template syntax shown as text (a {# #} comment spans lines?)")
        unknown = page.evaluate("[...document.body.querySelectorAll('*')]"
                                ".filter(e => e instanceof HTMLUnknownElement).map(e => e.outerHTML.slice(0, 80))")
        if unknown:
            found.append(f"elements HTML does not know (a placeholder read as a tag): {unknown}")
        footer_font = page.evaluate("getComputedStyle(document.querySelector('footer')).fontFamily")
        if "monospace" in footer_font:
            found.append(f"the footer is monospace: {footer_font}")
        if found:
            problems[path] = found
    assert problems == {}
    assert page.console_errors == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_fits_a_phone(live_server, page, every_page, language):
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    too_wide = {}
    for path, _ in visit_every_page(page, live_server, every_page):
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE_WIDTH:
            too_wide[path] = width
            page.screenshot(path=str(ARTIFACTS / f"narrow-{language[:2]}{path.replace('/', '_')}.png"))
    assert too_wide == {}


def assert_in_site_layout(page, response, status, heading, home):
    assert response.status == status
    assert home in page.locator("header.topbar nav").inner_text()  # the site's own navigation
    assert page.locator("footer").count() == 1
    assert heading in page.locator("main h1").inner_text()
    balance = TagBalance()
    balance.feed(response.text())
    balance.close()
    assert balance.problems == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE_WIDTH


@pytest.mark.parametrize("language, home, not_found, denied, failed", [
    ("en-US", "Home", "Page not found", "Access denied", "Server error"),
    ("zh-CN", "首页", "页面不存在", "无权访问", "服务器出错"),
])
def test_error_pages_wear_the_site_layout_in_the_readers_language(
        live_server, page, settings, language, home, not_found, denied, failed):
    settings.ROOT_URLCONF = "tests.browser.failing_urls"
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    contestant = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")

    response = page.goto(f"{live_server.url}/no/such/page/")
    assert_in_site_layout(page, response, 404, not_found, home)
    assert "/no/such/page/" in page.locator("main").inner_text()

    log_in_browser(page, live_server, contestant.user)
    response = page.goto(f"{live_server.url}/organizer/")  # a contestant on the organizers' console
    assert_in_site_layout(page, response, 403, denied, home)

    response = page.goto(f"{live_server.url}/test-only/server-error/")
    assert_in_site_layout(page, response, 500, failed, home)
    assert "alice" in page.locator("header").inner_text()  # rendered with the request's context
    shoot_error = ARTIFACTS / f"error-500-{language[:2]}.png"
    page.screenshot(path=str(shoot_error), full_page=True)


@pytest.mark.parametrize("language", ["en-US"])
def test_the_language_switch_works_without_javascript(live_server, page, every_page, language):
    context = page.context.browser.new_context(java_script_enabled=False, locale="en-US")
    plain = context.new_page()
    plain.goto(f"{live_server.url}/seasons/S1/leaderboard/")
    assert "Leaderboard" in plain.locator("h1").inner_text()
    with plain.expect_navigation():
        plain.locator("header form.lang button", has_text="简体中文").click()
    assert plain.url == f"{live_server.url}/seasons/S1/leaderboard/"  # the same page, now in Chinese
    assert "排行榜" in plain.locator("h1").inner_text() and "首页" in plain.locator("header").inner_text()
    with plain.expect_navigation():
        plain.locator("header form.lang button", has_text="English").click()
    assert "Leaderboard" in plain.locator("h1").inner_text()
    context.close()


@pytest.mark.parametrize("language, home, title, takes", [
    ("en-US", "Home", "Not a page to open", "takes POST from a button or form of the site, not GET"),
    ("zh-CN", "首页", "不是可以打开的页面", "只接受网站按钮或表单发来的 POST 请求，不接受 GET"),
])
def test_an_address_that_takes_only_post_opened_as_a_page_wears_the_site_layout(
        live_server, page, language, home, title, takes):
    """The walk of issue 12: opening /accounts/logout/ (or another button's address) gave a blank page."""
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    contestant = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    log_in_browser(page, live_server, contestant.user)
    for path in ("/accounts/logout/", "/account/tokens/"):
        response = page.goto(f"{live_server.url}{path}")
        assert_in_site_layout(page, response, 405, title, home)
        assert path in page.locator("main").inner_text() and takes in page.locator("main").inner_text()
        assert response.headers["allow"].startswith("POST")
    assert "alice" in page.locator("header").inner_text()  # still signed in: nothing was done
    assert [e for e in page.console_errors if "status of 405" not in e] == []


@pytest.mark.parametrize("language, home, heading, refusal, other, other_refusal", [
    ("en-US", "Home", "Bad request", "The address contains a NUL character", "简体中文", "地址中含有 NUL 字符"),
    ("zh-CN", "首页", "请求无效", "地址中含有 NUL 字符", "English", "The address contains a NUL character"),
])
def test_an_address_with_a_nul_is_refused_in_the_site_layout(
        live_server, page, language, home, heading, refusal, other, other_refusal):
    """The walk: `/seasons/%00/` was a bare line of text. The refusal is made before the session, CSRF and
    authentication middleware run, yet the page knows who is signed in and its language switch works."""
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    contestant = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    log_in_browser(page, live_server, contestant.user)
    response = page.goto(f"{live_server.url}/seasons/%00/")
    assert_in_site_layout(page, response, 400, heading, home)
    assert refusal in page.locator("main").inner_text()
    assert "alice" in page.locator("header").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"refused-nul-{language[:2]}.png"), full_page=True)
    with page.expect_navigation():
        page.locator("header form.lang button", has_text=other).click()
    assert page.url == f"{live_server.url}/seasons/%00/"  # the same address, refused in the other language
    assert other_refusal in page.locator("main").inner_text()
    assert [e for e in page.console_errors if "status of 400" not in e] == []
