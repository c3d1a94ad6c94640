"""Logging filters of the site."""
import logging


class OneLineClientErrors(logging.Filter):
    """A refused request (403, 404, a bad request) is the client's doing, not a fault: Django attaches
    the exception's traceback to its log record; keep the one line that names the status and path."""

    def filter(self, record):
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
