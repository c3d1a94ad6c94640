"""/api/v1/docs in Chromium with no internet: every request to another host is blocked, and the Swagger UI
(served from the site's own static files) still renders every operation of the API."""
from urllib.parse import urlsplit

import pytest

from config.api import api
from tests.browser.conftest import ARTIFACTS

pytestmark = pytest.mark.django_db(transaction=True)
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


def test_the_api_docs_render_every_operation_without_internet(live_server, page):
    blocked = []

    def only_this_machine(route):
        url = route.request.url
        if urlsplit(url).scheme in ("http", "https") and urlsplit(url).hostname not in LOCAL_HOSTS:
            blocked.append(url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", only_this_machine)
    page.goto(f"{live_server.url}/api/v1/docs")
    operations = [(method.upper(), path) for path, methods in api.get_openapi_schema()["paths"].items()
                  for method in methods]
    try:
        page.wait_for_function(f"document.querySelectorAll('.opblock').length >= {len(operations)}", timeout=30_000)
    finally:
        page.screenshot(path=str(ARTIFACTS / "api-docs-offline.png"), full_page=True)
    shown = set(zip(page.locator(".opblock-summary-method").all_inner_texts(),
                    [p.replace("\u200b", "") for p in page.locator(".opblock-summary-path").all_inner_texts()]))
    assert shown == set(operations)
    assert "GPU CodeForces API" in page.locator(".info .title").inner_text()
    assert blocked == [], f"the docs page asked other hosts for {blocked}"
    assert page.console_errors == []
