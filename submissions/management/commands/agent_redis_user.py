from django.core.management.base import BaseCommand, CommandError

from submissions.services import agent_redis

ACL_UNSUPPORTED_EXIT = 3


class Command(BaseCommand):
    help = ("Make or rotate (or --delete) an agent host's Redis ACL user on the agents' Redis and print "
            "the redis:// URL to hand to that host. It reaches the gpu.* queues' keys in database 0 only.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="the agent's name (as given to create_agent)")
        parser.add_argument("--delete", action="store_true", help="remove the user; its connections are closed")
        parser.add_argument("--quiet", action="store_true", help="print only the URL")

    def handle(self, name, delete=False, quiet=False, **options):
        try:
            if delete:
                removed = agent_redis.delete(name)
                self.stdout.write(f"Redis user of agent {name}: {'deleted' if removed else 'there was none'}")
                return
            url = agent_redis.create_or_rotate(name)
        except agent_redis.AclUnsupported as exc:
            self.stderr.write(str(exc))
            raise SystemExit(ACL_UNSUPPORTED_EXIT)
        except agent_redis.AgentRedisError as exc:
            raise CommandError(str(exc))
        self.stdout.write(url if quiet else f"Redis URL for agent {name}: {url}\n(store it now: it is not kept)")
