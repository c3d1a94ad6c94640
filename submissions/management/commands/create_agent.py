from django.core.management.base import BaseCommand, CommandError

from submissions.models import GpuType
from submissions.services import agent_redis
from submissions.services.accounts import create_agent


def gpu_types_from(specs):
    """`slug` or `slug:Name`; a GPU type not known yet is created."""
    types = []
    for spec in specs:
        slug, _, name = spec.partition(":")
        slug = slug.strip().lower()
        if not slug:
            raise CommandError(f"--gpu-type {spec!r}: no slug")
        gpu_type, _ = GpuType.objects.get_or_create(slug=slug, defaults={"name": name.strip() or slug})
        types.append(gpu_type)
    return types


class Command(BaseCommand):
    help = ("Register a profiler agent (or rotate its token), grant it GPU types, make its Redis ACL user, "
            "and print the token and Redis URL once.")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--gpu-type", action="append", dest="gpu_types", metavar="SLUG[:NAME]",
                            help="a GPU type whose runs this agent may start (repeatable; replaces the "
                            "agent's list; left out: the list stays as it is)")
        parser.add_argument("--no-redis-user", action="store_true",
                            help="leave the agent's Redis ACL user alone (see `manage.py agent_redis_user`)")
        parser.add_argument("--quiet", action="store_true", help="print only the token")
        parser.add_argument("--trusted", action="store_true",
                            help="its passed results need no second judging on another host (the organizer's own host)")

    def handle(self, name, gpu_types=None, no_redis_user=False, quiet=False, trusted=False, **options):
        redis_url = None
        if not no_redis_user:
            try:  # a name no Redis user can have is refused before anything is made
                agent_redis.username_for(name)
            except agent_redis.AgentRedisError as exc:
                raise CommandError(str(exc))
        types = gpu_types_from(gpu_types) if gpu_types is not None else None
        agent, token = create_agent(name, types)
        if trusted and not agent.trusted:
            agent.trusted = True
            agent.save(update_fields=["trusted"])
        if not no_redis_user:
            # after the agent's row: the user's rules follow its GPU types, and the row keeps the password's hash
            try:
                redis_url = agent_redis.create_or_rotate(name)
            except agent_redis.AclUnsupported as exc:
                self.stderr.write(f"warning: {exc}; the agent needs REDIS_URL itself (keep that Redis private)")
            except agent_redis.AgentRedisError as exc:
                raise CommandError(str(exc))
        if quiet:
            self.stdout.write(token)
            return
        served = ", ".join(t.slug for t in agent.gpu_types.order_by("slug")) or "none yet (add with --gpu-type)"
        self.stdout.write(f"agent {agent.name}: token {token}\nGPU types served: {served}")
        if redis_url:
            self.stdout.write(f"Redis URL for the agent host: {redis_url}")
        self.stdout.write("(store them now: only the token's and the Redis password's hashes are kept)")
