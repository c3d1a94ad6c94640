"""The guards of config/middleware.py answer before any view, and before the session, language,
CSRF and authentication middleware: a body too large (413), an upload file name that is not UTF-8 (400)
and a NUL in the address (400). On the site's pages each refusal wears the site's layout in the
visitor's language, with who is signed in and a working language switch; under /api/ it stays JSON."""
import html
import re

import pytest
from django.test import Client

from tests.site.bundle_files import CUDACODE, TORCHCODE
from tests.site.test_upload_hardening import multipart

BOUNDARY = b"XyZ0123"
ENGLISH = {"Accept-Language": "en"}
CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


def too_large(client, path, headers):
    return client.generic("POST", path, b"x" * 4096, content_type="multipart/form-data; boundary=XyZ0123",
                          headers=headers)


def gbk_file_name(client, path, headers):
    body = multipart(BOUNDARY, {"issue": "1"}, {b"torchcode.py": TORCHCODE, b"cudacode.py": CUDACODE,
                                                 "提示.py".encode("gbk"): b"# a helper\n"})
    return client.generic("POST", path, body, content_type="multipart/form-data; boundary=XyZ0123",
                          headers=headers)


def nul_in_the_address(client, path, headers):
    return client.get(path + "%00/", headers=headers)


REFUSALS = {
    "too-large": (too_large, "/submit/", "/api/v1/submissions", 413,
                  ("Request too large", "request refused: its body is 4 KiB; the limit is 1 KiB"),
                  ("请求过大", "请求被拒绝：请求体大小为 4 KiB；上限为 1 KiB")),
    "gbk-file-name": (gbk_file_name, "/submit/", "/api/v1/submissions", 400,
                      ("Bad request", "upload refused: the file name '提示.py' is not UTF-8"),
                      ("请求无效", "上传被拒绝：文件名“提示.py”不是 UTF-8 编码")),
    "nul": (nul_in_the_address, "/seasons/", "/api/v1/seasons/", 400,
            ("Bad request", "The address contains a NUL character; no page or API call accepts one."),
            ("请求无效", "地址中含有 NUL 字符；任何页面和 API 调用都不接受它。")),
}


@pytest.fixture(autouse=True)
def small_body_limit(settings):
    settings.REQUEST_MAX_BODY_BYTES = 1024


def refusal_page(response, status):
    """The page's text, checked to be the site's layout: header, language switch, footer."""
    assert response.status_code == status
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert int(response["Content-Length"]) == len(response.content)  # answered without waiting for a close
    assert response["X-Frame-Options"] == "DENY"  # as every page
    page = response.content.decode()
    assert '<header class="topbar">' in page and 'form action="/i18n/setlang/"' in page and "<footer>" in page
    return page


def refusal_text(page):
    return html.unescape(re.search(r'<p id="refusal">(.*?)</p>', page, re.S).group(1))


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_refusal_is_a_page_in_the_layout_on_the_site_and_json_under_the_api(client, db, refusal):
    send, page_path, api_path, status, english, chinese = REFUSALS[refusal]
    for headers, lang, (heading, message) in ((ENGLISH, "en", english), (CHINESE, "zh-hans", chinese)):
        response = send(client, page_path, headers)
        page = refusal_page(response, status)
        assert f'<html lang="{lang}">' in page
        assert f"<h1>{status} · {heading}</h1>" in page
        assert refusal_text(page).startswith(message)
        assert "Accept-Language" in response["Vary"]  # a cache keeps each language apart

        response = send(client, api_path, headers)
        assert response.status_code == status
        assert response["Content-Type"] == "application/json"
        assert int(response["Content-Length"]) == len(response.content)
        assert response.json()["detail"].startswith(message)


@pytest.mark.parametrize("refusal", REFUSALS)
def test_the_refusal_page_shows_who_is_signed_in(client, alice, refusal):
    send, page_path, _, status, _, _ = REFUSALS[refusal]
    client.force_login(alice.user)
    page = refusal_page(send(client, page_path, ENGLISH), status)
    assert 'href="/account/">alice</a>' in page and "Log out" in page and "Log in" not in page


def test_the_forms_of_a_refusal_page_pass_the_csrf_check(alice):
    """The page is rendered before CsrfViewMiddleware has run: its token (the log-out form's) must still
    match the cookie; the language switch, a display preference, takes none."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice.user)
    page = refusal_page(browser.get("/seasons/%00/", headers=ENGLISH), 400)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    tried = browser.post("/accounts/login/", {"csrfmiddlewaretoken": token, "username": "nobody", "password": "no"})
    assert tried.status_code == 200  # refused by the form, not by the CSRF check (403)
    switched = browser.post("/i18n/setlang/", {"language": "zh-hans", "next": "/seasons/%00/"})
    assert switched.status_code == 302 and switched["Location"] == "/seasons/%00/"
    again = refusal_page(browser.get(switched["Location"], headers=ENGLISH), 400)
    assert refusal_text(again) == REFUSALS["nul"][5][1]  # the switch wins over the browser's language
