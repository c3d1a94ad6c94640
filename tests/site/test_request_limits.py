"""Through a real HTTP server: a body over the limit is refused by its Content-Length alone, before it
is read; a refused page (403) is logged in one line, without a traceback."""
import http.client
import json
import logging
import re
import socket
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from submissions.services.accounts import create_api_token

HUNDRED_MIB = 100 * 1024 * 1024


@pytest.mark.parametrize("path, language, refusal", [
    ("/api/v1/submissions", "en", "request refused: its body is 100 MiB; the limit is "),
    ("/submit/", "zh-CN", "请求被拒绝：请求体大小为 100 MiB；上限为 "),
], ids=["api-en", "page-zh"])
def test_oversized_body_is_refused_by_its_content_length_before_it_is_read(live_server, alice, path, language,
                                                                           refusal):
    address = urlsplit(live_server.url)
    _, token = create_api_token(alice)
    headers = (f"POST {path} HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: Bearer {token}\r\n"
               f"Accept-Language: {language}\r\nContent-Type: multipart/form-data; boundary=XyZ0123\r\n"
               f"Content-Length: {HUNDRED_MIB}\r\n\r\n")
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        # Not one byte of the body goes out: only a server that refuses by the header can answer at all
        # (one that reads the body first waits until the timeout fails this test).
        connection.sendall(headers.encode())
        response = http.client.HTTPResponse(connection)
        response.begin()
        body = response.read().decode()
    assert response.status == 413
    if path.startswith("/api/"):
        assert json.loads(body)["detail"].startswith(refusal)
    else:  # a page in the site's layout (tests/site/test_refusal_pages.py)
        assert re.search(r'<p id="refusal">([^<]*)</p>', body).group(1).startswith(refusal)


def test_forbidden_page_is_logged_in_one_line_without_traceback(live_server, client, alice, caplog):
    client.force_login(alice.user)
    request = urllib.request.Request(f"{live_server.url}/organizer/",
                                     headers={"Cookie": f"sessionid={client.cookies['sessionid'].value}"})
    caplog.set_level(logging.INFO)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Forbidden (Permission denied): /organizer/"
    assert record.exc_info is None
    assert logging.Formatter().format(record) == "Forbidden (Permission denied): /organizer/"
