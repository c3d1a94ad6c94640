import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def chromium_path():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("Chromium is not installed: `apt-get install chromium` (.ci/run does it)")


# Whether Chromium has a font for Chinese: without one every character is the same empty box (the walk
# of issue 12 took its Chinese screenshots on such a machine). Two characters and an unassigned code
# point are drawn; with a font, each differs.
DRAWS_CHINESE = """() => {
  const canvas = document.createElement('canvas'); canvas.width = canvas.height = 48;
  const g = canvas.getContext('2d');
  const pixels = text => { g.clearRect(0, 0, 48, 48); g.font = '40px sans-serif'; g.fillText(text, 2, 40);
                           return g.getImageData(0, 0, 48, 48).data.join(','); };
  const pai = pixels('排');
  return pai !== pixels('行') && pai !== pixels('\\u0378');
}"""
CJK_FONT_HINT = "Chromium has no font for Chinese: install one (apt-get install fonts-wqy-microhei; .ci/run does)"


def draws_chinese(page):
    return page.evaluate(DRAWS_CHINESE)


@pytest.fixture(scope="package")
def chromium():
    """One Chromium for the browser tests of a test process (starting one took a second or two a test);
    each test still gets a fresh context of its own: no cookies, storage or cache carried over."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(request, chromium):
    """A fresh page in a fresh browser context; a test parametrized with `language` gets that browser locale."""
    params = getattr(request.node, "callspec", None)
    locale = params.params.get("language", "en-US") if params else "en-US"
    ARTIFACTS.mkdir(exist_ok=True)
    context = chromium.new_context(locale=locale)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    yield page
    for other in chromium.contexts:  # the test's own, and any it opened besides (test_every_page's no-JS one)
        other.close()
