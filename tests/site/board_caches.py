"""The board cache as the site tests use it (leaderboard/board_cache.py): in this process or in the
real Redis, under keys of the test's own; the `board_cache` fixture (tests/site/conftest.py) gives
one of each kind."""
import os
import uuid

import redis
from django.core.cache import caches

EN = {"Accept-Language": "en-US,en;q=0.9"}
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


class BoardCache:
    """The board cache of one test, in this process or in the real Redis (as several workers would
    share it), under keys of its own: emptying it never touches anything else in that Redis."""

    def __init__(self, kind):
        self.kind, self.prefix = kind, f"test-boards-{uuid.uuid4().hex[:10]}"
        if kind == "locmem":
            self.settings = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": self.prefix}
        else:
            self.settings = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                             "KEY_PREFIX": self.prefix}

    def empty(self):
        if self.kind == "locmem":
            caches["boards"].clear()
        else:  # never FLUSHDB: the database is shared
            server = redis.Redis.from_url(REDIS_URL)
            for name in server.scan_iter(f"{self.prefix}:*"):
                server.delete(name)


def board_keys(board_cache):
    if board_cache.kind == "locmem":
        return list(caches["boards"]._cache)
    return list(redis.Redis.from_url(REDIS_URL).scan_iter(f"{board_cache.prefix}:*"))
