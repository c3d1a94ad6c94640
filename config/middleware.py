"""Guards that must act before any view, form or CSRF check reads a request.

RefuseNulMiddleware runs before anything that queries (see it); the two body guards sit right after
LocaleMiddleware (their refusals are in the visitor's language) and before CsrfViewMiddleware, which
parses every POST body to find the CSRF token. RequestsInFlightMiddleware only counts requests.
"""
import re
from urllib.parse import unquote_plus

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.locale import LocaleMiddleware
from django.shortcuts import render
from django.utils import translation
from django.utils.http import parse_header_parameters
from django.utils.translation import gettext as _

from config import chunked_bodies
from leaderboard import board_cache
from submissions.bundles import human_size

FILE_NAME = re.compile(rb'filename="([^"]*)"|filename=([^;\s]*)')


def _refusal(request, status, message):
    """`message` as JSON (`detail`) under /api/, else as a page in the site's layout."""
    if request.path_info.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=status)
    else:
        response = _refusal_page(request, status, message)
    # Set here, outside CommonMiddleware: without it a client must wait for the connection to close,
    # and a server that drains the unread body (runserver does) keeps it open.
    response["Content-Length"] = len(response.content)
    return response


def _refusal_page(request, status, message):
    """The refusal page, through the middleware the guards answer before: the session, language, CSRF and
    user they set up are what the layout shows (who is signed in, the language switch and its token,
    which must match the visitor's CSRF cookie), and their answers' headers (Vary, the CSRF cookie,
    X-Frame-Options) are those of every page. Never CommonMiddleware: it may redirect instead."""
    heading = _("Request too large") if status == 413 else _("Bad request")

    def page(request):
        return render(request, "refused.html", {"status": status, "heading": heading, "message": message},
                      status=status)

    handler = XFrameOptionsMiddleware(CsrfViewMiddleware(page))
    if not hasattr(request, "user"):
        handler = AuthenticationMiddleware(handler)
    if not hasattr(request, "LANGUAGE_CODE"):
        handler = LocaleMiddleware(handler)
    if not hasattr(request, "session"):
        handler = SessionMiddleware(handler)
    return handler(request)


class RequestBodyLimitMiddleware:
    """A body above REQUEST_MAX_BODY_BYTES is refused (413) by its Content-Length, unread: Django would
    otherwise stream all of it to a temporary file before a view could refuse it. A chunked body has no
    Content-Length: config/chunked_bodies.py read it up to the limit and marked it when it went on."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get(chunked_bodies.OVER_LIMIT):
            return _refusal(request, 413, _("request refused: its body is more than %(limit)s, the limit")
                            % {"limit": human_size(settings.REQUEST_MAX_BODY_BYTES)})
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django reads no body then either
        limit = settings.REQUEST_MAX_BODY_BYTES
        if length > limit:
            return _refusal(request, 413, _("request refused: its body is %(size)s; the limit is %(limit)s")
                            % {"size": human_size(length), "limit": human_size(limit)})
        return self.get_response(request)


def _legible(raw: bytes) -> str:
    # Most non-UTF-8 names come from a Chinese system's code page.
    try:
        return raw.decode("gbk")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")


def undecodable_file_names(body: bytes, boundary: bytes) -> list[str]:
    """Names of uploaded files whose part header is not UTF-8: Django's multipart parser skips such a
    header line, and with it the whole file, without a word."""
    names, delimiter = [], b"--" + boundary
    start = body.find(delimiter)
    while start != -1:
        headers_start = start + len(delimiter)
        headers_end = body.find(b"\r\n\r\n", headers_start)
        if headers_end == -1:
            break
        for line in body[headers_start:headers_end].split(b"\r\n"):
            if not line.lower().startswith(b"content-disposition:"):
                continue
            try:
                line.decode()
            except UnicodeDecodeError:
                match = FILE_NAME.search(line)
                if match:
                    names.append(_legible(match.group(1) or match.group(2)))
        next_part = body.find(b"\r\n" + delimiter, headers_end)
        start = next_part + 2 if next_part != -1 else -1
    return names


class UploadFileNamesMiddleware:
    """Refuses (400) a multipart request with a file whose name is not UTF-8, naming it, instead of
    letting the file vanish. Reads the body, which RequestBodyLimitMiddleware has bounded."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.content_type == "multipart/form-data":
            boundary = parse_header_parameters(request.META.get("CONTENT_TYPE", ""))[1].get("boundary", "")
            names = undecodable_file_names(request.body, boundary.encode("ascii", "ignore")) if boundary else []
            if names:
                return _refusal(request, 400, _("upload refused: the file name '%(name)s' is not UTF-8; send file "
                                                "names in UTF-8 (or rename the file)") % {"name": names[0]})
        return self.get_response(request)


NUL = "\x00"


class RefuseNulMiddleware:
    """A NUL character in the address (`/seasons/%00/`, `?q=%00`) is refused with 400: PostgreSQL
    cannot compare text holding one, so it would reach a query as a server error. A cookie holding one
    is dropped before the session middleware looks the session up. Runs before LocaleMiddleware, so it
    picks the reader's language itself."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Cookies first: the refusal page looks the session up too.
        if any(NUL in name or NUL in value for name, value in request.COOKIES.items()):
            request.COOKIES = {name: value for name, value in request.COOKIES.items()
                               if NUL not in name and NUL not in value}
        if NUL in request.path_info or NUL in unquote_plus(request.META.get("QUERY_STRING", "")):
            # The visitor's language, restored afterwards: LocaleMiddleware has not run yet.
            with translation.override(translation.get_language_from_request(request)):
                return _refusal(request, 400, _("The address contains a NUL character; no page or API call "
                                                "accepts one."))
        return self.get_response(request)


class ErrorAnswersMiddleware:
    """Error answers Django or django-ninja make without a body of ours: under /api/ each becomes JSON
    with a `detail` (an unknown address was the HTML 404 page, a wrong method the text "Method not
    allowed"); on the site a 405 (`GET /accounts/logout/`) was a blank page and now wears the layout.
    Last of the middleware: the user and the CSRF token are known when it renders."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code < 400 or response.streaming:
            return response
        if request.path_info.startswith("/api/"):
            if response.get("Content-Type", "").startswith("application/json"):
                return response
            replaced = JsonResponse({"detail": self.api_detail(request, response)}, status=response.status_code)
        elif response.status_code == 405 and not response.content:
            allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip() not in ("", "OPTIONS", "HEAD")]
            replaced = render(request, "405.html", status=405, context={
                "request_path": request.path, "method": request.method, "allowed": ", ".join(allowed)})
        else:
            return response
        if response.has_header("Allow"):
            replaced["Allow"] = response["Allow"]
        return replaced

    @staticmethod
    def api_detail(request, response):
        status = response.status_code
        if status == 404:
            return _("there is no API call at %(path)s; the API's calls are listed at /api/v1/docs") % {
                "path": request.path}
        if status == 405:  # sorted: ninja lists a path's methods in no fixed order
            allowed = sorted(m.strip() for m in response.get("Allow", "").split(",") if m.strip())
            return _("%(method)s is not allowed on %(path)s; allowed: %(allowed)s") % {
                "method": request.method, "path": request.path, "allowed": ", ".join(allowed)}
        if status >= 500:
            return _("server error; the organizers can find it in the site's log")
        return response.reason_phrase


class RequestsInFlightMiddleware:
    """Counts the requests this process is answering: under load the board cache serves a page's
    previous rendering and renders the new one in the background; a visitor alone waits for it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        board_cache.request_began()
        try:
            return self.get_response(request)
        finally:
            board_cache.request_ended()
