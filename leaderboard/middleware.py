"""Requests no view should see."""
from urllib.parse import unquote_plus

from django.http import HttpResponseBadRequest, JsonResponse
from django.utils import translation
from django.utils.translation import gettext as _

NUL = "\x00"


class RefuseNulMiddleware:
    """A NUL character in the address (`/seasons/%00/`, `?q=%00`) is refused with 400: PostgreSQL
    cannot compare text holding one, so it would reach a query as a server error. A cookie holding one
    is dropped before the session middleware looks the session up. Runs before LocaleMiddleware, so it
    picks the reader's language itself."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if NUL in request.path_info or NUL in unquote_plus(request.META.get("QUERY_STRING", "")):
            return self.refusal(request)
        if any(NUL in name or NUL in value for name, value in request.COOKIES.items()):
            request.COOKIES = {name: value for name, value in request.COOKIES.items()
                               if NUL not in name and NUL not in value}
        return self.get_response(request)

    @staticmethod
    def refusal(request):
        with translation.override(translation.get_language_from_request(request)):
            message = _("The address contains a NUL character; no page or API call accepts one.")
        if request.path_info.startswith("/api/"):
            return JsonResponse({"detail": message}, status=400)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
