"""Redis ACL users for agent hosts, on the agents' Redis (`REDIS_URL`).

An agent host gets its own user, able to run an RQ worker on the `gpu.*` queues and nothing more:
only the RQ keys of those queues (the job hashes and the worker records RQ shares among queues),
only the commands RQ's worker uses, no pub/sub channel, and no SELECT, SWAPDB, MOVE, COPY, MIGRATE,
FLUSH*, KEYS, SCAN, CONFIG, DEBUG, MONITOR, ACL, SCRIPT, EVAL*, FUNCTION, MODULE, SHUTDOWN or CLIENT
KILL: it stays in database 0 and cannot reach the site's own queue (`SITE_REDIS_URL`, database 1 by
default). The rules were found by running a real agent worker under such a user (tests/site/
test_agent_trust.py runs one).
"""
import re
import secrets
from urllib.parse import quote, urlsplit

import redis
from django.conf import settings

USER_PREFIX = "gpucf-agent-"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
QUEUE_PREFIX_PATTERN = re.compile(r"^[A-Za-z0-9._-]+$")
ACL_MIN_VERSION = (6, 0)

# The commands an RQ 3.0 worker (JudgeWorker) sends: connection set-up, job hashes, queue lists,
# registries (sorted sets), worker records (sets, hashes), results (streams), transactions.
COMMANDS = (
    "auth", "hello", "ping", "info", "client|setname", "client|getname", "client|info", "client|id",
    "multi", "exec", "discard", "watch", "unwatch",
    "exists", "del", "unlink", "expire", "pexpire", "persist", "ttl", "pttl", "type",
    "get", "set", "setex",
    "hset", "hmset", "hget", "hmget", "hgetall", "hdel", "hexists", "hincrby", "hincrbyfloat", "hsetnx",
    "lpush", "rpush", "lpop", "rpop", "blpop", "lmove", "blmove", "lrem", "lrange", "llen", "lpos", "lindex",
    "sadd", "srem", "smembers", "scard", "sismember", "smismember",
    "zadd", "zrem", "zrange", "zrangebyscore", "zrevrangebyscore", "zremrangebyscore", "zcard", "zscore",
    "zcount", "zpopmin",
    "xadd", "xrange", "xrevrange", "xtrim", "xlen", "xread",
)


class AgentRedisError(Exception):
    """The ACL user could not be made (bad name, no ACL support, no permission)."""


class AclUnsupported(AgentRedisError):
    """The Redis server is older than 6: it has no ACL users."""


def username_for(agent_name):
    if not NAME_PATTERN.match(agent_name):
        raise AgentRedisError(f"agent name {agent_name!r} cannot name a Redis user: use letters, digits, '.', '_', '-'")
    return USER_PREFIX + agent_name


def key_patterns(queue_prefix):
    """The RQ keys a worker on the queues `<queue_prefix>*` reads and writes (RQ's `rq:` prefix)."""
    if not QUEUE_PREFIX_PATTERN.match(queue_prefix):
        raise AgentRedisError(f"queue prefix {queue_prefix!r} has characters an ACL key pattern would misread")
    per_queue = ("queue", "wip", "finished", "failed", "deferred", "scheduled", "canceled", "workers",
                 "clean_registries", "intermediate", "ready", "rate_limited", "stopped")
    return [
        *(f"rq:{kind}:{queue_prefix}*" for kind in per_queue),
        "rq:job:*", "rq:results:*", "rq:executions:*", "rq:execution:*",  # job ids are not per queue
        "rq:worker:*", "rq:workers", "rq:suspended", "rq:queues",
        "rq:groups", "rq:clean_group_registries", "rq:rate_limit*",
    ]


def acl_rules(queue_prefix):
    return ["reset", "on", "resetchannels", *(f"~{p}" for p in key_patterns(queue_prefix)),
            "-@all", *(f"+{c}" for c in COMMANDS)]


def admin_connection():
    """The site's own connection to the agents' Redis; its user must be allowed ACL SETUSER."""
    return redis.Redis.from_url(settings.REDIS_ADMIN_URL or settings.REDIS_URL)


def server_version(connection):
    text = str(connection.info("server")["redis_version"])
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


def agents_database():
    """The database number (or name) of REDIS_URL, where the site puts the agents' jobs."""
    from submissions.checks import redis_location

    return redis_location(settings.REDIS_URL)[2]


def agent_url(username, password):
    """The URL an agent host is given: the agents' Redis as agents reach it, database 0."""
    base = urlsplit(settings.AGENT_REDIS_URL or settings.REDIS_URL)
    host = base.hostname or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    port = f":{base.port}" if base.port else ""
    return f"{base.scheme}://{quote(username, safe='')}:{quote(password, safe='')}@{host}{port}/0"


def create_or_rotate(agent_name, connection=None):
    """Make (or give a new password to) the agent's ACL user; returns the Redis URL to hand over.
    A rotation disconnects the user's open connections: the old password stops working at once."""
    username = username_for(agent_name)
    database = agents_database()
    if database != 0:
        # The user may not SELECT (it would reach the site's queue): an agent given this URL would wait
        # in database 0 while the site puts its jobs in REDIS_URL's database.
        raise AgentRedisError(f"REDIS_URL names database {database}, but an agent's Redis user stays in database 0: "
                              f"the site's jobs would never reach it. Use database 0 of a server for REDIS_URL "
                              f"(the site's own queue takes database 1: SITE_REDIS_URL)")
    connection = connection or admin_connection()
    if server_version(connection) < ACL_MIN_VERSION:
        raise AclUnsupported("this Redis has no ACL users (it is older than 6)")
    password = secrets.token_urlsafe(32)
    try:
        connection.execute_command("ACL", "SETUSER", username, *acl_rules(settings.GPU_QUEUE_PREFIX), f">{password}")
        connection.execute_command("CLIENT", "KILL", "USER", username)
    except redis.ResponseError as exc:
        if "No such user" not in str(exc) and "No such client" not in str(exc):
            raise AgentRedisError(f"could not set up Redis user {username}: {exc}") from exc
    return agent_url(username, password)


def delete(agent_name, connection=None):
    """Remove the agent's ACL user (Redis closes its connections); False when there was none."""
    connection = connection or admin_connection()
    if server_version(connection) < ACL_MIN_VERSION:
        return False
    return bool(connection.execute_command("ACL", "DELUSER", username_for(agent_name)))
