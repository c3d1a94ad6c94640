"""System checks of the deployment's settings (`manage.py check --deploy` shows them too)."""
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Warning, register

LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def redis_location(url):
    """(host, port, database) of a redis:// URL; database 0 when the URL names none."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    host = "localhost" if host in LOOPBACK else host
    database = parts.path.strip("/") or "0"
    return (host, parts.port or 6379, int(database) if database.isdigit() else database)


@register()
def site_queue_apart_from_agents(app_configs=None, **kwargs):
    if redis_location(settings.SITE_REDIS_URL) == redis_location(settings.REDIS_URL):
        return [Warning(
            "SITE_REDIS_URL points at the same Redis database as REDIS_URL",
            hint="Every agent host can write to REDIS_URL's database, so the site's own queue (whose worker "
                 "holds the database credentials and SECRET_KEY) must live elsewhere: leave SITE_REDIS_URL "
                 "unset (database 1 of the same server) or point it at another database or server.",
            id="submissions.W001")]
    return []
