"""Request bodies sent with `Transfer-Encoding: chunked`, for Django, which reads CONTENT_LENGTH bytes of
`wsgi.input` and, without that header, none: such an upload reached the API as an empty form ("issue:
Field required"). gunicorn de-chunks the body and says so (`wsgi.input_terminated`); here it is read, at
most REQUEST_MAX_BODY_BYTES + 1 bytes of it, and handed on with its length. A longer body is handed on
cut there and marked: RequestBodyLimitMiddleware refuses it (413) as it refuses a long Content-Length,
and the rest is never read."""
import tempfile

from django.conf import settings

OVER_LIMIT = "gpucf.chunked_body_over_limit"
IN_MEMORY_BYTES = 2.5 * 1024 * 1024  # beyond, the body waits in a temporary file (Django's upload default)
CHUNK_BYTES = 64 * 1024


def is_chunked(environ) -> bool:
    return "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower() and not environ.get("CONTENT_LENGTH")


class ChunkedBodies:
    """WSGI middleware around the site's application (config/wsgi.py)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        # Only where the server ends the stream at the body's end: elsewhere a read could wait forever.
        if is_chunked(environ) and environ.get("wsgi.input_terminated"):
            environ = self.with_read_body(environ)
        return self.application(environ, start_response)

    @staticmethod
    def with_read_body(environ):
        limit = settings.REQUEST_MAX_BODY_BYTES
        body = tempfile.SpooledTemporaryFile(max_size=int(IN_MEMORY_BYTES))
        source, left = environ["wsgi.input"], limit + 1
        while left > 0:
            chunk = source.read(min(CHUNK_BYTES, left))
            if not chunk:
                break
            body.write(chunk)
            left -= len(chunk)
        length = body.tell()
        body.seek(0)
        environ = {**environ, "wsgi.input": body, "CONTENT_LENGTH": str(length)}
        if length > limit:
            environ[OVER_LIMIT] = True
        return environ
