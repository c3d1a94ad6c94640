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
def agents_queues_in_database_zero(app_configs=None, **kwargs):
    database = redis_location(settings.REDIS_URL)[2]
    if database != 0:
        return [Warning(
            f"REDIS_URL names database {database}; agents' Redis users reach database 0 only",
            hint="An agent host's Redis user may not SELECT another database (it would reach the site's own "
                 "queue), so it waits in database 0 while the site puts its jobs in REDIS_URL's: use database 0 "
                 "for REDIS_URL (manage.py agent_redis_user refuses to make users until then).",
            id="submissions.W002")]
    return []


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
