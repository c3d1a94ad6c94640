from django.core.management.base import BaseCommand, CommandError

from submissions.models import Agent
from submissions.services import agent_redis
from submissions.services.accounts import revoke_agent


class Command(BaseCommand):
    help = "Revoke an agent: its token stops working, its Redis user is deleted, its running runs are requeued."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, name, **options):
        agent = Agent.objects.filter(name=name).first()
        if agent is None:
            raise CommandError(f"no agent named {name}")
        requeued = revoke_agent(agent)
        try:
            redis_user = "deleted" if agent_redis.delete(name) else "none"
        except Exception as exc:  # the token is revoked whatever Redis says
            redis_user = f"NOT deleted ({exc}); run `manage.py agent_redis_user {name} --delete`"
        self.stdout.write(f"agent {name} revoked; {requeued} running run(s) requeued; Redis user: {redis_user}")
