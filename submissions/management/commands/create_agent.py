from django.core.management.base import BaseCommand

from submissions.services.accounts import create_agent


class Command(BaseCommand):
    help = "Register a profiler agent (or rotate its token) and print the token once."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--quiet", action="store_true", help="print only the token")

    def handle(self, name, quiet=False, **options):
        agent, token = create_agent(name)
        if quiet:
            self.stdout.write(token)
        else:
            self.stdout.write(f"agent {agent.name}: token {token}\n(store it now: only its hash is kept)")
