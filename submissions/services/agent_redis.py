"""Redis ACL users for agent hosts, on the agents' Redis (`REDIS_URL`).

An agent host gets its own user, able to run an RQ worker on the queues of the GPU types the site
grants it and nothing more:
- its queues (`rq:queue:gpu.<type>`, `.final` and `.rejudge`): only LMOVE/BLMOVE from them into its own claim
  list (`rq:claimed:<prefix><user>`; profiler_agent/worker/job_claims.py) and reads: no push, no LREM, no
  plain pop, so a job leaves a queue only into the claim list of the host that took it, where the site
  checks it at `start`;
- the job hashes, executions and results of its GPU types' jobs (`rq:job:gpu-<type>_*`: job ids name
  their type, queueing.job_id; and RQ's `rq:job::<id>:dependencies`, which RQ expires as it ends
  each job), its queues' registries, and its own worker records
  (`rq:worker:<user>:*`);
- nothing global: not `rq:suspended` (no host pauses the fleet), not the worker sets, not another type's
  queues or jobs, no pub/sub channel;
- only the commands RQ's worker uses, and no SELECT, SWAPDB, MOVE, COPY, MIGRATE, FLUSH*, KEYS, SCAN,
  CONFIG, DEBUG, MONITOR, ACL, SCRIPT, EVAL*, FUNCTION, MODULE, SHUTDOWN or CLIENT KILL: it stays in
  database 0 and cannot reach the site's own queue (`SITE_REDIS_URL`, database 1 by default).

The site keeps the SHA-256 of each user's password (`Agent.redis_password_sha256`, never the password):
after a Redis restart that lost its users, the sweep makes them again from it (`restore_missing`), and
a change of an agent's GPU types, a quarantine or a revocation rewrites its rules (`sync`). Where the
server has an ACL file (`aclfile`), every change is saved to it (`ACL SAVE`), so users also survive a
restart on their own. The rules were found by running a real agent worker under such a user
(tests/e2e/test_agent_trust.py runs them).
"""
import hashlib
import logging
import re
import secrets
from urllib.parse import quote, urlsplit

import redis
from django.conf import settings

log = logging.getLogger(__name__)

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
QUEUE_PREFIX_PATTERN = re.compile(r"^[A-Za-z0-9._-]+$")
SLUG_PATTERN = re.compile(r"^[A-Za-z0-9-]+$")
ACL_MIN_VERSION = (7, 0)  # selectors: queue moves allowed apart from the other keys' commands

# The commands an RQ 3.0 worker (JudgeWorker) sends on its job hashes, registries, worker records and
# results: connection set-up, hashes, sorted sets, sets, streams, transactions. No list command: the
# only lists a host touches are its queues and its claim list (QUEUE_COMMANDS).
COMMANDS = (
    "auth", "hello", "ping", "info", "client|setname", "client|getname", "client|info", "client|id",
    "multi", "exec", "discard", "watch", "unwatch",
    "exists", "del", "unlink", "expire", "pexpire", "persist", "ttl", "pttl", "type",
    "get", "set", "setex",
    "hset", "hmset", "hget", "hmget", "hgetall", "hdel", "hexists", "hincrby", "hincrbyfloat", "hsetnx",
    "sadd", "srem", "smembers", "scard", "sismember", "smismember",
    "zadd", "zrem", "zrange", "zrangebyscore", "zrevrangebyscore", "zremrangebyscore", "zcard", "zscore",
    "zcount", "zpopmin",
    "xadd", "xrange", "xrevrange", "xtrim", "xlen", "xread",
)
QUEUE_COMMANDS = ("lmove", "blmove", "llen", "lpos", "lrange", "lindex")
REGISTRIES = ("wip", "finished", "failed", "deferred", "scheduled", "canceled", "stopped", "clean_registries")
JOB_KEYS = ("job", "results", "executions", "execution")

class AgentRedisError(Exception):
    """The ACL user could not be made (bad name, no ACL support, no permission)."""


class AclUnsupported(AgentRedisError):
    """The Redis server is older than 7: it has no ACL selectors (or no ACL users at all)."""


def username_for(agent_name):
    if not NAME_PATTERN.match(agent_name):
        raise AgentRedisError(f"agent name {agent_name!r} cannot name a Redis user: use letters, digits, '.', '_', '-'")
    prefix = settings.AGENT_REDIS_USER_PREFIX
    if not NAME_PATTERN.match(prefix):
        raise AgentRedisError(f"AGENT_REDIS_USER_PREFIX {prefix!r} cannot start a Redis user's name: use letters, "
                              "digits, '.', '_', '-'")
    return prefix + agent_name


def claim_list(agent_name):
    """The claim list of the agent's host (queueing.claim_list_key); None for a name no user can have."""
    from submissions import queueing

    return queueing.claim_list_key(username_for(agent_name)) if NAME_PATTERN.match(agent_name) else None


def key_patterns(agent_name, gpu_slugs):
    """The keys (outside its queues and claim list) that the agent's worker reads and writes."""
    from submissions import queueing

    prefix = settings.GPU_QUEUE_PREFIX
    if not QUEUE_PREFIX_PATTERN.match(prefix):
        raise AgentRedisError(f"queue prefix {prefix!r} has characters an ACL key pattern would misread")
    patterns = [f"rq:worker:{username_for(agent_name)}:*"]
    for slug in sorted(gpu_slugs):
        if not SLUG_PATTERN.match(slug):
            raise AgentRedisError(f"GPU type {slug!r} cannot be granted through Redis: its slug may hold letters, "
                                  "digits and '-' only (an '_' would let its key pattern match another type's jobs)")
        patterns += [f"rq:{kind}:{queueing.job_id_prefix(slug)}*" for kind in JOB_KEYS]
        # RQ's key of a job's dependencies has two colons (`rq:job::<id>:dependencies`); RQ expires it
        # in the transaction that ends every job, which fails whole if this key is refused
        patterns.append(f"rq:job::{queueing.job_id_prefix(slug)}*")
        for queue in queue_names(slug):
            patterns += [f"rq:{registry}:{queue}" for registry in REGISTRIES]
    return patterns


def queue_names(slug):
    """The GPU type's queues, in the order agents read them: its final system test's, the fresh runs',
    the rejudges' (services/scheduling.py)."""
    from submissions.models import FINAL_QUEUE_SUFFIX, REJUDGE_QUEUE_SUFFIX

    fresh = f"{settings.GPU_QUEUE_PREFIX}{slug}"
    return [fresh + FINAL_QUEUE_SUFFIX, fresh, fresh + REJUDGE_QUEUE_SUFFIX]


def acl_rules(agent_name, gpu_slugs, *, enabled=True):
    """ACL SETUSER rules (without the password). The queue moves are a selector of their own: there the
    host may move ids from its queues into its claim list and read both, nothing else."""
    queue_keys = [f"~rq:queue:{queue}" for slug in sorted(gpu_slugs) for queue in queue_names(slug)]
    selector = " ".join([*queue_keys, f"~{claim_list(agent_name)}", *(f"+{c}" for c in QUEUE_COMMANDS)])
    return ["reset", "on" if enabled else "off", "resetchannels", *(f"~{p}" for p in key_patterns(agent_name, gpu_slugs)),
            "-@all", *(f"+{c}" for c in COMMANDS), f"({selector})"]


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


def _check_server(connection):
    database = agents_database()
    if database != 0:
        # The user may not SELECT (it would reach the site's queue): an agent given this URL would wait
        # in database 0 while the site puts its jobs in REDIS_URL's database.
        raise AgentRedisError(f"REDIS_URL names database {database}, but an agent's Redis user stays in database 0: "
                              f"the site's jobs would never reach it. Use database 0 of a server for REDIS_URL "
                              f"(the site's own queue takes database 1: SITE_REDIS_URL)")
    if server_version(connection) < ACL_MIN_VERSION:
        raise AclUnsupported("this Redis has no ACL selectors (it is older than 7); agents' users need them")


def _agent(agent_name):
    from submissions.models import Agent

    return Agent.objects.filter(name=agent_name).first()


def _rules_for(agent_name, agent):
    slugs = list(agent.gpu_types.values_list("slug", flat=True)) if agent is not None else []
    enabled = agent is None or (agent.is_active and not agent.quarantine_reason)
    return acl_rules(agent_name, slugs, enabled=enabled)


def save_acl(connection):
    """Write the users to the server's ACL file, where it has one (an operator's `aclfile`)."""
    try:
        connection.execute_command("ACL", "SAVE")
        return True
    except redis.ResponseError as exc:
        if "ACL file" not in str(exc) and "aclfile" not in str(exc).lower():
            log.warning("ACL SAVE failed: %s", exc)
        return False


def create_or_rotate(agent_name, connection=None):
    """Make (or give a new password to) the agent's ACL user; returns the Redis URL to hand over.
    A rotation disconnects the user's open connections: the old password stops working at once. The
    agent's row (when it exists) keeps the password's SHA-256, to make the user again after a restart."""
    username = username_for(agent_name)
    connection = connection or admin_connection()
    _check_server(connection)
    agent = _agent(agent_name)
    password = secrets.token_urlsafe(32)
    try:
        connection.execute_command("ACL", "SETUSER", username, *_rules_for(agent_name, agent), f">{password}")
        connection.execute_command("CLIENT", "KILL", "USER", username)
    except redis.ResponseError as exc:
        if "No such user" not in str(exc) and "No such client" not in str(exc):
            raise AgentRedisError(f"could not set up Redis user {username}: {exc}") from exc
    if agent is not None:
        agent.redis_password_sha256 = hashlib.sha256(password.encode()).hexdigest()
        agent.save(update_fields=["redis_password_sha256"])
        from submissions import queueing

        queueing.site_connection().hset(rules_key(), agent.name, _fingerprint(_rules_for(agent_name, agent)))
    save_acl(connection)
    return agent_url(username, password)


def rules_key():
    """Where the site notes, on its own Redis, the fingerprint of the rules it last gave each user."""
    return f"gpucf:agent-acl-rules:{settings.GPU_QUEUE_PREFIX}"


def _fingerprint(rules):
    return hashlib.sha256("\n".join(rules).encode()).hexdigest()[:16]


def sync(agent, connection=None):
    """Rewrite the agent's user from the site's record (its GPU types, whether it may work, its
    password's hash). False when the site keeps no hash for it (a user made by hand: left alone)."""
    from submissions import queueing

    if not agent.redis_password_sha256 or not NAME_PATTERN.match(agent.name):
        return False
    connection = connection or admin_connection()
    username = username_for(agent.name)
    rules = _rules_for(agent.name, agent)
    connection.execute_command("ACL", "SETUSER", username, *rules, f"#{agent.redis_password_sha256}")
    if not agent.is_active or agent.quarantine_reason:
        try:
            connection.execute_command("CLIENT", "KILL", "USER", username)
        except redis.ResponseError:
            pass  # no connection open
    save_acl(connection)
    queueing.site_connection().hset(rules_key(), agent.name, _fingerprint(rules))
    return True


def restore_missing(connection=None):
    """Make again every user the server lost (a restart without its ACL file), and rewrite every user
    whose rules are not the ones this site's code gives now (an upgrade that changed them); returns
    the agents' names."""
    from submissions import queueing
    from submissions.models import Agent

    connection = connection or admin_connection()
    present = {raw.decode() if isinstance(raw, bytes) else raw for raw in connection.execute_command("ACL", "USERS")}
    given = {k.decode(): v.decode() for k, v in queueing.site_connection().hgetall(rules_key()).items()}
    restored = []
    for agent in Agent.objects.exclude(redis_password_sha256="").prefetch_related("gpu_types"):
        if not NAME_PATTERN.match(agent.name):
            continue
        if username_for(agent.name) not in present or given.get(agent.name) != _fingerprint(_rules_for(agent.name, agent)):
            sync(agent, connection)
            restored.append(agent.name)
    if restored:
        log.warning("the Redis users of agents %s were missing or had older rules: made again", ", ".join(restored))
    return restored


def delete(agent_name, connection=None):
    """Remove the agent's ACL user (Redis closes its connections); False when there was none."""
    connection = connection or admin_connection()
    if server_version(connection) < (6, 0):
        return False
    removed = bool(connection.execute_command("ACL", "DELUSER", username_for(agent_name)))
    agent = _agent(agent_name)
    if agent is not None and agent.redis_password_sha256:
        agent.redis_password_sha256 = ""
        agent.save(update_fields=["redis_password_sha256"])
    save_acl(connection)
    return removed


def _sync_on_commit(agent_id):
    from django.db import transaction

    from submissions.models import Agent

    def sync_now():
        agent = Agent.objects.filter(pk=agent_id).first()
        if agent is None or not agent.redis_password_sha256:
            return
        try:
            sync(agent)
        except (redis.RedisError, AgentRedisError) as exc:  # the next sweep's restore does not fix rules: say so
            log.error("agent %s: its Redis user could not be updated (%s); run manage.py agent_redis_user %s",
                      agent.name, exc, agent.name)
    transaction.on_commit(sync_now, robust=True)


def connect():
    """A change of an agent's GPU types or of whether it may work (revoked, quarantined) rewrites its
    Redis user's rules, once the change commits."""
    from django.db.models.signals import m2m_changed, post_save

    from submissions.models import Agent

    def grants_changed(sender, instance, action, **kwargs):
        if action in ("post_add", "post_remove", "post_clear") and isinstance(instance, Agent):
            _sync_on_commit(instance.pk)

    def agent_saved(sender, instance, created, update_fields=None, **kwargs):
        if not created and (update_fields is None or {"is_active", "quarantine_reason"} & set(update_fields)):
            _sync_on_commit(instance.pk)

    # weak=False: these functions live in this call only, and a weak reference would drop them at its end
    m2m_changed.connect(grants_changed, sender=Agent.gpu_types.through, dispatch_uid="agent_redis.grants", weak=False)
    post_save.connect(agent_saved, sender=Agent, dispatch_uid="agent_redis.active", weak=False)
